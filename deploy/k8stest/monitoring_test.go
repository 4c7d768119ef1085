package k8stest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

func TestServiceMonitorScrapesTheMetricsPort(t *testing.T) {
	forEach(t, func(t *testing.T, k Kustomization, m *Manifests) {
		sms := All[*ServiceMonitor](m)
		if !k.Monitoring {
			if len(sms) != 0 || len(All[*PrometheusRule](m)) != 0 {
				t.Error("Prometheus Operator objects without the monitoring component: kubectl apply fails where the CRDs are missing")
			}
			return
		}
		if len(sms) != 1 {
			t.Fatalf("want one ServiceMonitor, got %d", len(sms))
		}
		sm := sms[0]
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil || sel.Empty() {
			t.Fatalf("ServiceMonitor selector %v: %v", sm.Spec.Selector, err)
		}
		var selected []*corev1.Service
		for _, svc := range All[*corev1.Service](m) {
			if sel.Matches(labels.Set(svc.Labels)) {
				selected = append(selected, svc)
			}
		}
		if len(selected) != 1 || selected[0].Name != "plantstore" {
			t.Fatalf("ServiceMonitor selects %d Services, want the one Service plantstore", len(selected))
		}
		if len(sm.Spec.Endpoints) != 1 {
			t.Fatalf("want one endpoint, got %+v", sm.Spec.Endpoints)
		}
		ep := sm.Spec.Endpoints[0]
		if ep.Port != "metrics" {
			t.Errorf("ServiceMonitor port %q, want the Service's metrics port", ep.Port)
		}
		found := false
		for _, p := range selected[0].Spec.Ports {
			found = found || p.Name == ep.Port
		}
		if !found {
			t.Errorf("the Service has no port named %q", ep.Port)
		}
		d, _ := workload(t, m)
		if want := d.Spec.Template.Annotations["prometheus.io/path"]; ep.Path != want {
			t.Errorf("ServiceMonitor path %q, the pod annotation says %q", ep.Path, want)
		}
		interval, err1 := time.ParseDuration(ep.Interval)
		timeout, err2 := time.ParseDuration(ep.ScrapeTimeout)
		if err1 != nil || err2 != nil || timeout >= interval {
			t.Errorf("interval %q, scrapeTimeout %q: want durations, the timeout shorter", ep.Interval, ep.ScrapeTimeout)
		}
	})
}

func TestPrometheusRules(t *testing.T) {
	rule := monitoringRule(t)
	alerts := 0
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if (r.Alert == "") == (r.Record == "") {
				t.Errorf("group %s: rule %+v: want exactly one of alert and record", g.Name, r)
			}
			if r.Alert == "" {
				continue
			}
			alerts++
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s: want a summary and a description", r.Alert)
			}
		}
	}
	if alerts == 0 {
		t.Error("no alerts")
	}
}

// monitoringRule returns the PrometheusRule of the monitoring component.
func monitoringRule(t *testing.T) *PrometheusRule {
	t.Helper()
	for _, k := range Kustomizations {
		if k.Monitoring {
			rules := All[*PrometheusRule](rendered(t)[k.Name])
			if len(rules) != 1 {
				t.Fatalf("%s: want one PrometheusRule, got %d", k.Name, len(rules))
			}
			return rules[0]
		}
	}
	t.Fatal("no kustomization with the monitoring component")
	return nil
}

func TestGrafanaDashboard(t *testing.T) {
	forEach(t, func(t *testing.T, k Kustomization, m *Manifests) {
		var dashboards []*corev1.ConfigMap
		for _, cm := range All[*corev1.ConfigMap](m) {
			if cm.Labels["grafana_dashboard"] == "1" {
				dashboards = append(dashboards, cm)
			}
		}
		if !k.Monitoring {
			if len(dashboards) != 0 {
				t.Error("a dashboard without the monitoring component")
			}
			return
		}
		if len(dashboards) != 1 || dashboards[0].Name != "plantstore-dashboard" {
			t.Fatalf("want one dashboard ConfigMap plantstore-dashboard (a fixed name), got %d", len(dashboards))
		}
		exprs, err := DashboardExprs(dashboards[0])
		if err != nil {
			t.Fatal(err)
		}
		if len(exprs) < 5 {
			t.Errorf("only %d panel queries", len(exprs))
		}
		for _, e := range exprs {
			if _, err := Selectors(e); err != nil {
				t.Errorf("%q: %v", e, err)
			}
		}
	})
}

// TestRulesPassPromtool runs Prometheus's own checks on the rule groups:
// `promtool check rules` (syntax, and that every expression parses), then
// `promtool test rules` with testdata/rules_test.yaml, which feeds series to
// the rules and expects the alerts to fire, or not, as the objectives say.
func TestRulesPassPromtool(t *testing.T) {
	promtool := lookPath(t, "promtool", "Debian's prometheus package")
	dir := t.TempDir()
	rules, err := yaml.Marshal(monitoringRule(t).Spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules, 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("testdata/rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tests, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rules_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// lookPath finds a program the test needs: missing, the test skips with a
// loud reason on a laptop and fails under CI=true.
func lookPath(t *testing.T, name, from string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true (install it from %s): %v", name, from, err)
	}
	t.Skipf("SKIPPED: %s not found (install it from %s); under CI=true this fails", name, from)
	return ""
}
