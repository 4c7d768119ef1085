package k8stest

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// The Prometheus Operator's custom resources, reduced to the fields the
// manifests use, with the operator's JSON names (monitoring.coreos.com/v1).
// k8s.io/api has no types for them, and the operator's own Go module would
// bring in much of Kubernetes; strict decoding into these catches a
// misspelled or misplaced field all the same. A manifest that needs another
// field adds it here, under the operator's name for it.

// ServiceMonitor tells the operator's Prometheus which Services to scrape.
type ServiceMonitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ServiceMonitorSpec `json:"spec"`
}

// ServiceMonitorSpec selects Services by label and names their ports.
type ServiceMonitorSpec struct {
	Selector          metav1.LabelSelector `json:"selector"`
	NamespaceSelector *NamespaceSelector   `json:"namespaceSelector,omitempty"`
	JobLabel          string               `json:"jobLabel,omitempty"`
	Endpoints         []Endpoint           `json:"endpoints"`
}

// NamespaceSelector picks the namespaces of the selected Services; without
// it, the ServiceMonitor's own.
type NamespaceSelector struct {
	Any        bool     `json:"any,omitempty"`
	MatchNames []string `json:"matchNames,omitempty"`
}

// Endpoint is one scraped port of the selected Services.
type Endpoint struct {
	Port          string `json:"port,omitempty"` // a Service port's name
	Path          string `json:"path,omitempty"`
	Scheme        string `json:"scheme,omitempty"`
	Interval      string `json:"interval,omitempty"`
	ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
	HonorLabels   bool   `json:"honorLabels,omitempty"`
}

// PrometheusRule carries Prometheus rule groups, in Prometheus's own rule
// file format.
type PrometheusRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              PrometheusRuleSpec `json:"spec"`
}

// PrometheusRuleSpec is a rule file's content.
type PrometheusRuleSpec struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is a group of rules evaluated together.
type RuleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []Rule `json:"rules"`
}

// Rule is a recording rule (Record) or an alerting rule (Alert).
type Rule struct {
	Record        string            `json:"record,omitempty"`
	Alert         string            `json:"alert,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}
