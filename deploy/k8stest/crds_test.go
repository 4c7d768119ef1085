package k8stest

import (
	"context"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/plantstore/plantstore/internal/kubetest"
)

// The operators whose custom resources a variant uses. Each one's
// definitions are installed on the shared control plane once, by the
// first test that needs them (needCRDs).
const (
	prometheusOperator = "prometheus-operator" // components/monitoring
	cloudNativePG      = "cloudnative-pg"      // overlays/cloudnative-pg
)

var crdsInstalled = map[string]*sync.Once{prometheusOperator: {}, cloudNativePG: {}}

// needCRDs installs an operator's definitions of the kinds the manifests
// use, unless a test did already: the Prometheus Operator's ServiceMonitor
// and PrometheusRule, CloudNativePG's Cluster. (No operator runs: the API
// server checks the objects against the definitions' schemas, and nothing
// acts on them.)
func needCRDs(t *testing.T, c *cluster, operator string) {
	t.Helper()
	crdsInstalled[operator].Do(func() {
		switch operator {
		case prometheusOperator:
			installCRDs(t, c,
				kubetest.PrometheusOperatorCRD(t, "servicemonitors"),
				kubetest.PrometheusOperatorCRD(t, "prometheusrules"))
		case cloudNativePG:
			installCRDs(t, c, kubetest.CloudNativePGCRD(t, "clusters"))
		default:
			t.Fatalf("no CRDs known for %q", operator)
		}
	})
}

// installCRDs applies CustomResourceDefinitions, given as YAML, and waits
// until the API server serves them.
func installCRDs(t *testing.T, c *cluster, defs ...[]byte) {
	t.Helper()
	var crds []*unstructured.Unstructured
	for _, def := range defs {
		js, err := yaml.YAMLToJSON(def)
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
