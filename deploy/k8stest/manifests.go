package k8stest

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
