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

// PostgresCluster is CloudNativePG's Cluster (postgresql.cnpg.io/v1), a
// PostgreSQL primary and its standbys run by the operator, reduced like
// the kinds above to the fields the manifests use, under the operator's
// names. The server checks the object against the operator's own schema
// (cloudnativepg_test.go); this type keeps the decode strict.
type PostgresCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              PostgresClusterSpec `json:"spec"`
}

// PostgresClusterSpec is the Cluster's size, configuration and first
// database.
type PostgresClusterSpec struct {
	Instances  int                    `json:"instances"`
	PostgreSQL *PostgresConfiguration `json:"postgresql,omitempty"`
	Bootstrap  *PostgresBootstrap     `json:"bootstrap,omitempty"`
	Storage    *PostgresStorage       `json:"storage,omitempty"`
}

// PostgresConfiguration is the servers' settings and their replication.
type PostgresConfiguration struct {
	Parameters  map[string]string    `json:"parameters,omitempty"`
	Synchronous *PostgresSynchronous `json:"synchronous,omitempty"`
}

// PostgresSynchronous is the synchronous replication the operator keeps
// in synchronous_standby_names.
type PostgresSynchronous struct {
	Method         string `json:"method"` // "any" (quorum) or "first" (priority)
	Number         int    `json:"number"`
	DataDurability string `json:"dataDurability,omitempty"` // "required" or "preferred"
	FailoverQuorum bool   `json:"failoverQuorum,omitempty"`
}

// PostgresBootstrap says how the Cluster's first instance is made.
type PostgresBootstrap struct {
	InitDB *PostgresInitDB `json:"initdb,omitempty"`
}

// PostgresInitDB creates a new cluster with the application's database and
// its owner.
type PostgresInitDB struct {
	Database string `json:"database,omitempty"`
	Owner    string `json:"owner,omitempty"`
}

// PostgresStorage is each instance's volume.
type PostgresStorage struct {
	Size         string  `json:"size,omitempty"`
	StorageClass *string `json:"storageClass,omitempty"`
}
