package main

// The manifests of deploy/k8s checked against this program: every setting
// they pass is one it reads and accepts, the ports and paths they name are
// the ones it serves, the grace period covers its shutdown, and the alerts
// and the dashboard read series it exports. What Kubernetes itself needs of
// the manifests is checked in deploy/k8stest.

import (
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/peterbourgon/ff/v3"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/plantstore/plantstore/deploy/k8stest"
	"github.com/plantstore/plantstore/modules/plants"
)

// goRuntimeEnv are variables the Go runtime of the binary reads.
var goRuntimeEnv = []string{"GOMEMLIMIT", "GOGC", "GOMAXPROCS", "GODEBUG", "GOTRACEBACK"}

// otelEnv are the OpenTelemetry SDK's standard variables for traces, which
// the tracing module leaves to the SDK and its OTLP exporter.
var otelEnv = []string{
	"OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_PROPAGATORS",
	"OTEL_TRACES_EXPORTER", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
	"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
	"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE",
	"OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
	"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
}

// libpqEnv are libpq's variables that the PostgreSQL driver reads for what
// --postgres-url leaves out (the flag's help says so): the CloudNativePG
// overlay sets the TLS and session settings its operator's URI lacks.
var libpqEnv = []string{
	"PGHOST", "PGPORT", "PGDATABASE", "PGUSER", "PGPASSWORD", "PGPASSFILE", "PGAPPNAME",
	"PGCONNECT_TIMEOUT", "PGSSLMODE", "PGSSLKEY", "PGSSLCERT", "PGSSLROOTCERT",
	"PGTARGETSESSIONATTRS", "PGOPTIONS", "PGCHANNELBINDING",
}

// targetLabels are added by Prometheus when it scrapes (the Prometheus
// Operator's ServiceMonitor adds namespace, service, pod and container),
// so the service cannot export them.
var targetLabels = []string{"job", "instance", "namespace", "service", "endpoint", "pod", "container"}

// flagEnvVars returns the environment twin of every flag.
func flagEnvVars() []string {
	var names []string
	newFlagSet(&config{}).VisitAll(func(f *flag.Flag) { names = append(names, envVar(f.Name)) })
	return names
}

// clearFlagEnv unsets every flag's twin for the test, so that the
// developer's own PLANTSTORE_* settings cannot leak into it.
func clearFlagEnv(t *testing.T) {
	for _, name := range flagEnvVars() {
		t.Setenv(name, "")
		_ = os.Unsetenv(name)
	}
}

// TestEnvVarIsTheOneFFReads pins envVar to ff's naming: setting a flag's
// twin sets that flag and no other.
func TestEnvVarIsTheOneFFReads(t *testing.T) {
	clearFlagEnv(t)
	newFlagSet(&config{}).VisitAll(func(f *flag.Flag) {
		value := f.DefValue
		if value == "" {
			value = "x"
		}
		if example, ok := flagExamples[f.Name]; ok {
			value = example
		}
		t.Setenv(envVar(f.Name), value)
		fs := newFlagSet(&config{})
		if err := ff.Parse(fs, nil, ff.WithEnvVarPrefix(envPrefix)); err != nil {
			t.Fatalf("%s=%s: %v", envVar(f.Name), value, err)
		}
		var set []string
		fs.Visit(func(f *flag.Flag) { set = append(set, f.Name) })
		if !slices.Equal(set, []string{f.Name}) {
			t.Errorf("%s set the flags %v, want [%s]", envVar(f.Name), set, f.Name)
		}
		_ = os.Unsetenv(envVar(f.Name))
	})
}

// workload returns the Deployment and its container.
func workload(t *testing.T, m *k8stest.Manifests) (*appsv1.Deployment, *corev1.Container) {
	t.Helper()
	d, c, err := m.Workload()
	if err != nil {
		t.Fatal(err)
	}
	return d, c
}

// containerEnv resolves the container's environment as the kubelet would,
// with a stand-in for each Secret's value.
func containerEnv(t *testing.T, m *k8stest.Manifests, c *corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			t.Fatalf("envFrom %+v: only ConfigMaps are resolved here", from)
		}
		cm, ok := k8stest.Named[*corev1.ConfigMap](m, from.ConfigMapRef.Name)
		if !ok {
			t.Fatalf("envFrom: no ConfigMap %s", from.ConfigMapRef.Name)
		}
		for k, v := range cm.Data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		switch ref := e.ValueFrom; {
		case ref == nil:
			env[e.Name] = e.Value
		case ref.SecretKeyRef != nil:
			env[e.Name] = "secret " + ref.SecretKeyRef.Name + "/" + ref.SecretKeyRef.Key
		case ref.ConfigMapKeyRef != nil:
			cm, _ := k8stest.Named[*corev1.ConfigMap](m, ref.ConfigMapKeyRef.Name)
			if cm == nil {
				t.Fatalf("env %s: no ConfigMap %s", e.Name, ref.ConfigMapKeyRef.Name)
			}
			env[e.Name] = cm.Data[ref.ConfigMapKeyRef.Key]
		case ref.ResourceFieldRef != nil && slices.Contains(goRuntimeEnv, e.Name):
			limit := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(ref.ResourceFieldRef.Resource, "limits."))]
			env[e.Name] = strconv.FormatInt(limit.Value(), 10)
		default:
			t.Fatalf("env %s: a source this test does not resolve: %+v", e.Name, ref)
		}
	}
	return env
}

// configFromEnv parses the program's configuration from env alone, as the
// container starts it: no arguments.
func configFromEnv(t *testing.T, env map[string]string) (config, error) {
	clearFlagEnv(t)
	for k, v := range env {
		t.Setenv(k, v)
	}
	return parseConfig(nil, io.Discard)
}

func port(t *testing.T, addr string) int32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	n, err2 := strconv.ParseInt(p, 10, 32)
	if err != nil || err2 != nil {
		t.Fatalf("address %q: no port", addr)
	}
	return int32(n)
}

func render(t *testing.T, k k8stest.Kustomization) *k8stest.Manifests {
	t.Helper()
	all, err := k8stest.RenderAll()
	if err != nil {
		t.Fatal(err)
	}
	return all[k.Name]
}

// TestManifestsConfigureTheProgram checks every setting a manifest passes
// to the program, and what the manifests assume about its configuration.
func TestManifestsConfigureTheProgram(t *testing.T) {
	known := slices.Concat(flagEnvVars(), goRuntimeEnv, otelEnv, libpqEnv)
	for _, k := range k8stest.Kustomizations {
		t.Run(k.Name, func(t *testing.T) {
			m := render(t, k)
			d, c := workload(t, m)
			env := containerEnv(t, m, c)
			for name := range env {
				if !slices.Contains(known, name) {
					t.Errorf("env %s: the program reads no such variable (its flags' twins: %v)", name, flagEnvVars())
				}
			}
			cfg, err := configFromEnv(t, env)
			if err != nil {
				t.Fatalf("the program refuses the manifests' settings: %v", err)
			}

			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			if want := port(t, cfg.HTTP.Addr); ports["http"] != want {
				t.Errorf("container port http %d, the program listens on %s", ports["http"], cfg.HTTP.Addr)
			}
			if want := port(t, cfg.HTTP.AdminAddr); ports["admin"] != want {
				t.Errorf("container port admin %d, the program's admin listener is on %s", ports["admin"], cfg.HTTP.AdminAddr)
			}

			// Kubernetes sends SIGTERM after the preStop sleep and SIGKILL at
			// the end of the grace period; the program's stop must fit
			// between the two.
			if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil ||
				d.Spec.Template.Spec.TerminationGracePeriodSeconds == nil {
				t.Fatal("want a preStop sleep and terminationGracePeriodSeconds")
			}
			preStop := time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
			grace := time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
			if need := preStop + stopTimeout(cfg); grace <= need {
				t.Errorf("terminationGracePeriodSeconds %v: want more than preStop %v + drain %v + shutdown %v + %v for traces and the store",
					grace, preStop, cfg.HTTP.DrainDelay, cfg.HTTP.ShutdownTimeout, stopTimeout(cfg)-cfg.HTTP.DrainDelay-cfg.HTTP.ShutdownTimeout)
			}

			mounts := map[string]corev1.Volume{} // by mount path
			for _, vm := range c.VolumeMounts {
				for _, v := range d.Spec.Template.Spec.Volumes {
					if v.Name == vm.Name {
						mounts[vm.MountPath] = v
					}
				}
			}
			// The token file's directory is watched: it must be the Secret
			// volume's own directory, where Kubernetes swaps the ..data link.
			if len(cfg.Auth.Tokens) > 0 {
				t.Error("tokens in the manifests: they belong in the Secret")
			}
			tokens := mounts[filepath.Dir(cfg.Auth.TokensFile)]
			if tokens.Secret == nil || len(tokens.Secret.Items) > 0 || filepath.Base(cfg.Auth.TokensFile) != "tokens" {
				t.Errorf("tokens file %q: want the key tokens at the root of a Secret volume's mount", cfg.Auth.TokensFile)
			}

			if cfg.Plants.Store != k.Store {
				t.Errorf("store %q, want %q", cfg.Plants.Store, k.Store)
			}
			switch cfg.Plants.Store {
			case plants.StoreBolt:
				if v := mounts[cfg.Plants.Bolt.DataDir]; v.PersistentVolumeClaim == nil {
					t.Errorf("data dir %q is not a PersistentVolumeClaim's mount", cfg.Plants.Bolt.DataDir)
				}
			case plants.StorePostgres:
				if !strings.HasPrefix(env[envVar("postgres-url")], "secret ") {
					t.Errorf("%s must come from a Secret", envVar("postgres-url"))
				}
			}
		})
	}
}

// adminGet asks the admin listener of s for path.
func adminGet(t *testing.T, s *testServer, path string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.Admin+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestManifestPathsAreServed asks the real admin listener for every path
// the manifests name: the probes, the scrape annotation's path and the
// ServiceMonitor's.
func TestManifestPathsAreServed(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	paths := map[string]bool{}
	for _, k := range k8stest.Kustomizations {
		m := render(t, k)
		d, c := workload(t, m)
		for _, p := range []*corev1.Probe{c.StartupProbe, c.LivenessProbe, c.ReadinessProbe} {
			if p == nil || p.HTTPGet == nil {
				t.Fatalf("%s: want three httpGet probes", k.Name)
			}
			paths[p.HTTPGet.Path] = true
		}
		paths[d.Spec.Template.Annotations["prometheus.io/path"]] = true
		for _, sm := range k8stest.All[*k8stest.ServiceMonitor](m) {
			for _, ep := range sm.Spec.Endpoints {
				paths[ep.Path] = true
			}
		}
	}
	for path := range paths {
		if code, body := adminGet(t, s, path, nil); code != http.StatusOK {
			t.Errorf("GET %s on the admin listener: %d %s", path, code, body)
		}
	}
}

// TestMonitoringReadsExportedSeries checks every metric and label value the
// alert rules and the dashboard select against real scrapes of the
// program (on bolt with webhooks after a create, and on postgres): a
// misspelt metric or label would make an alert that never fires.
func TestMonitoringReadsExportedSeries(t *testing.T) {
	t.Parallel()
	s := startServer(t, webhooksConfig(t)) // the alerts read the webhook metrics too
	if r := s.post(t, `{"id":1,"name":"Monstera"}`); r.Status != http.StatusOK {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}

	var metricsPath string
	var exprs []string
	recorded := map[string]bool{}
	for _, k := range k8stest.Kustomizations {
		m := render(t, k)
		d, _ := workload(t, m)
		metricsPath = d.Spec.Template.Annotations["prometheus.io/path"]
		for _, r := range k8stest.All[*k8stest.PrometheusRule](m) {
			for _, g := range r.Spec.Groups {
				for _, rule := range g.Rules {
					exprs = append(exprs, rule.Expr)
					if rule.Record != "" {
						recorded[rule.Record] = true
					}
				}
			}
		}
		for _, cm := range k8stest.All[*corev1.ConfigMap](m) {
			if cm.Labels["grafana_dashboard"] == "1" {
				e, err := k8stest.DashboardExprs(cm)
				if err != nil {
					t.Fatal(err)
				}
				exprs = append(exprs, e...)
			}
		}
	}
	if len(recorded) == 0 || len(exprs) == 0 {
		t.Fatal("no rules or dashboard found")
	}

	code, body := adminGet(t, s, metricsPath, http.Header{"Accept": {string(expfmt.NewFormat(expfmt.TypeTextPlain))}})
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d", metricsPath, code)
	}
	series := scrapedSeries(t, body)
	// The postgres store's own series (its commits waiting on replication)
	// come from a program on postgres, scraped the same way.
	pg := startServer(t, postgresConfig(t))
	code, body = adminGet(t, pg, metricsPath, http.Header{"Accept": {string(expfmt.NewFormat(expfmt.TypeTextPlain))}})
	if code != http.StatusOK {
		t.Fatalf("GET %s on postgres: %d", metricsPath, code)
	}
	for name, sets := range scrapedSeries(t, body) {
		series[name] = append(series[name], sets...)
	}

	for _, expr := range exprs {
		sels, err := k8stest.Selectors(expr)
		if err != nil {
			t.Fatalf("%q: %v", expr, err)
		}
		for _, sel := range sels {
			if recorded[sel.Metric] {
				continue
			}
			got, ok := series[sel.Metric]
			if !ok {
				t.Errorf("%s: the program exports no such series (in %q)", sel.Metric, expr)
				continue
			}
			for _, mt := range sel.Matchers {
				if slices.Contains(targetLabels, mt.Label) {
					continue
				}
				if !slices.ContainsFunc(got, func(s model.LabelSet) bool {
					v, has := s[model.LabelName(mt.Label)]
					// A regex or negative matcher may select values not seen
					// in this scrape (5xx codes); its label must exist.
					return has && (mt.Op != "=" || string(v) == mt.Value)
				}) {
					t.Errorf("%s{%s%s%q}: no exported series has this label (value) (in %q)", sel.Metric, mt.Label, mt.Op, mt.Value, expr)
				}
			}
		}
	}
}

// scrapedSeries parses a text-format scrape into the label sets of each
// series name (a histogram's _bucket, _sum and _count included).
func scrapedSeries(t *testing.T, body string) map[string][]model.LabelSet {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	series := map[string][]model.LabelSet{}
	for name, fam := range families {
		for _, metric := range fam.GetMetric() {
			ls := model.LabelSet{}
			for _, lp := range metric.GetLabel() {
				ls[model.LabelName(lp.GetName())] = model.LabelValue(lp.GetValue())
			}
			switch {
			case metric.Histogram != nil:
				series[name+"_count"] = append(series[name+"_count"], ls)
				series[name+"_sum"] = append(series[name+"_sum"], ls)
				bucket := ls.Clone()
				bucket[model.BucketLabel] = ""
				series[name+"_bucket"] = append(series[name+"_bucket"], bucket)
			case metric.Summary != nil:
				series[name+"_count"] = append(series[name+"_count"], ls)
				series[name+"_sum"] = append(series[name+"_sum"], ls)
				series[name] = append(series[name], ls)
			default:
				series[name] = append(series[name], ls)
			}
		}
	}
	return series
}
