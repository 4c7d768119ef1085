package kubetest

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// restrictedLabels put a namespace under the restricted Pod Security
// Standard: pods that break it are refused (enforce), and objects with pod
// templates that would break it draw a warning (warn) and an audit entry.
var restrictedLabels = map[string]string{
	"pod-security.kubernetes.io/enforce": "restricted",
	"pod-security.kubernetes.io/warn":    "restricted",
	"pod-security.kubernetes.io/audit":   "restricted",
}

// Clientset is a typed client for the admin user.
func (cp *ControlPlane) Clientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// RestrictedNamespace creates a namespace labelled RestrictedLabels and
// deletes it when the test ends.
func (cp *ControlPlane) RestrictedNamespace(t testing.TB, name string) string {
	t.Helper()
	cs := cp.Clientset(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: restrictedLabels}}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cs.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("kubetest: delete namespace %s: %v", name, err)
		}
	})
	return name
}
