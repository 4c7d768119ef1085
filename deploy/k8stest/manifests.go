package k8stest

import (
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Manifests are the objects one kustomization renders, in kustomize's order.
type Manifests struct {
	Objects []Object
}

// All returns the objects of type T, e.g. All[*appsv1.Deployment](m).
func All[T any](m *Manifests) []T {
	var out []T
	for _, obj := range m.Objects {
		if v, ok := obj.Value.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// Named returns the object of type T with the given name, or false.
func Named[T interface{ GetName() string }](m *Manifests, name string) (T, bool) {
	for _, v := range All[T](m) {
		if v.GetName() == name {
			return v, true
		}
	}
	var zero T
	return zero, false
}

// Workload returns the one Deployment, plantstore, and its one container.
func (m *Manifests) Workload() (*appsv1.Deployment, *corev1.Container, error) {
	deps := All[*appsv1.Deployment](m)
	if len(deps) != 1 || deps[0].Name != "plantstore" || len(deps[0].Spec.Template.Spec.Containers) != 1 {
		return nil, nil, errors.New("want one Deployment, plantstore, with one container")
	}
	return deps[0], &deps[0].Spec.Template.Spec.Containers[0], nil
}
