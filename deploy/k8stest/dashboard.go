package k8stest

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// DashboardExprs returns the PromQL of every panel of the dashboards in a
// ConfigMap (panels in collapsed rows included).
func DashboardExprs(cm *corev1.ConfigMap) ([]string, error) {
	var exprs []string
	for key, data := range cm.Data {
		var d struct {
			UID    string  `json:"uid"`
			Panels []panel `json:"panels"`
		}
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if d.UID == "" {
			return nil, fmt.Errorf("%s: dashboard without a uid", key)
		}
		for _, p := range d.Panels {
			exprs = append(exprs, p.exprs()...)
		}
	}
	return exprs, nil
}

type panel struct {
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // of a collapsed row
}

func (p panel) exprs() []string {
	var out []string
	for _, t := range p.Targets {
		out = append(out, t.Expr)
	}
	for _, c := range p.Panels {
		out = append(out, c.exprs()...)
	}
	return out
}
