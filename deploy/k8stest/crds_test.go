package k8stest

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/plantstore/plantstore/internal/kubetest"
)

// installPrometheusOperatorCRDs applies the operator's published
// definitions of the two kinds the monitoring component uses, and waits
// until the API server serves them.
func installPrometheusOperatorCRDs(t *testing.T, c *cluster) {
	t.Helper()
	var crds []*unstructured.Unstructured
	for _, name := range []string{"servicemonitors", "prometheusrules"} {
		js, err := yaml.YAMLToJSON(kubetest.PrometheusOperatorCRD(t, name))
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatal(err)
		}
		crds = append(crds, u)
	}
	c.mustApply(t, "", crds)
	for _, crd := range crds {
		waitFor(t, crd.GetName()+" established", func() (bool, error) {
			res, err := c.resource(crd, "")
			if err != nil {
				return false, err
			}
			live, err := res.Get(context.Background(), crd.GetName(), metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			status, _ := live.Object["status"].(map[string]any) // none until the server's first look
			conds, _ := status["conditions"].([]any)
			for _, cond := range conds {
				if m, ok := cond.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
	}
	c.mapper.Reset()
}
