package k8stest

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// applyCase is a kustomization applied to the real control plane, with
// the replica count its Deployment reaches (the postgres overlay's through
// its autoscaler's minimum).
var applyCases = []struct {
	name     string
	dir      string
	replicas int32
	crds     string // the operator whose CRDs it needs, or ""
}{
	{"default", "deploy/k8s", 1, ""},
	{"postgres", "deploy/k8s/overlays/postgres", 3, ""},
	{"cloudnative-pg", "deploy/k8s/overlays/cloudnative-pg", 3, cloudNativePG},
	{"default-monitoring", "deploy/k8stest/testdata/default-monitoring", 1, prometheusOperator},
	{"postgres-monitoring", "deploy/k8stest/testdata/postgres-monitoring", 3, prometheusOperator},
}

// TestApplyServerSide applies each variant into a restricted namespace:
// every object is accepted without a warning, a second apply changes
// nothing, and the controller-manager makes the ReplicaSet and its Pods,
// which pass restricted Pod Security admission. (No kubelet runs: the pods
// stay unscheduled; admission is what is tested.)
func TestApplyServerSide(t *testing.T) {
	c := newCluster(t)
	for _, tc := range applyCases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.crds != "" {
				needCRDs(t, c, tc.crds)
			}
			ns := c.cp.RestrictedNamespace(t, "apply-"+tc.name)
			objs := render(t, tc.dir)
			first := c.mustApply(t, ns, objs)

			// The pods: created by the ReplicaSet controller and admitted.
			var d *appsv1.Deployment
			waitFor(t, "the Deployment's pods", func() (bool, error) {
				var err error
				d, err = c.cs.AppsV1().Deployments(ns).Get(context.Background(), "plantstore", metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				return d.Status.Replicas == tc.replicas && len(c.pods(t, ns)) == int(tc.replicas), nil
			})
			checkOwnedPods(t, c, ns, d)

			// A second apply changes nothing, also after the controllers
			// (and for the postgres overlay, the autoscaler) wrote theirs.
			if diffs := c.diff(t, ns, objs); len(diffs) > 0 {
				for obj, d := range diffs {
					t.Errorf("a second apply would change %s:\n%s", obj, d)
				}
			}
			second := c.mustApply(t, ns, objs)
			for i := range objs {
				if !sameFields(first[i], second[i]) {
					t.Errorf("%s: a second apply changed the test's managed fields", id(objs[i]))
				}
			}
			d2, err := c.cs.AppsV1().Deployments(ns).Get(context.Background(), "plantstore", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if d2.Generation != d.Generation || *d2.Spec.Replicas != tc.replicas {
				t.Errorf("after a second apply: generation %d -> %d, replicas %d (want %d)", d.Generation, d2.Generation, *d2.Spec.Replicas, tc.replicas)
			}
		})
	}
}

// checkOwnedPods checks the chain Deployment -> one ReplicaSet -> Pods that
// the controller-manager builds, and that every pod carries the restricted
// profile's settings as admitted.
func checkOwnedPods(t *testing.T, c *cluster, ns string, d *appsv1.Deployment) {
	t.Helper()
	rss, err := c.cs.AppsV1().ReplicaSets(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rss.Items) != 1 || !ownedBy(rss.Items[0].OwnerReferences, d.UID) {
		t.Fatalf("want one ReplicaSet owned by the Deployment, have %d", len(rss.Items))
	}
	for _, p := range c.pods(t, ns) {
		if !ownedBy(p.OwnerReferences, rss.Items[0].UID) {
			t.Errorf("pod %s is not the ReplicaSet's", p.Name)
		}
		sc := p.Spec.Containers[0].SecurityContext
		if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("pod %s: container securityContext %+v", p.Name, sc)
		}
	}
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller && r.UID == uid {
			return true
		}
	}
	return false
}

// sameFields reports whether the test's field manager owns the same fields,
// applied by the same operation, in both versions of an object.
func sameFields(a, b interface {
	GetManagedFields() []metav1.ManagedFieldsEntry
}) bool {
	find := func(o interface {
		GetManagedFields() []metav1.ManagedFieldsEntry
	}) string {
		for _, e := range o.GetManagedFields() {
			if e.Manager == fieldManager && e.Operation == metav1.ManagedFieldsOperationApply {
				return strings.Join([]string{e.APIVersion, e.FieldsV1.GetRawString()}, " ")
			}
		}
		return ""
	}
	return find(a) != "" && find(a) == find(b)
}
