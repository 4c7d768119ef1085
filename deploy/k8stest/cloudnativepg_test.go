package k8stest

// Tests of overlays/cloudnative-pg: plantstore on a CloudNativePG Cluster.
// The operator itself cannot run here (it needs pods that run: no kubelet
// runs on the test control plane), so what it would do is checked two
// ways: the Cluster against the operator's own CRD schema on the real API
// server, and the names plantstore's Deployment refers to (the Secrets the
// operator generates, the Service the URI names) against the source of the
// pinned operator release, which is what decides them. Not checked: the
// operator's admission webhook (it would, for one, refuse more synchronous
// standbys than instances) and everything that happens once PostgreSQL
// runs.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"io"
	"maps"
	"path"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/plantstore/plantstore/internal/kubetest"
)

const cnpgOverlay = "deploy/k8s/overlays/cloudnative-pg"

// goStringConst returns the value of a string constant declared in a Go
// source file.
func goStringConst(t *testing.T, file, name string) string {
	t.Helper()
	f, err := parser.ParseFile(gotoken.NewFileSet(), file, kubetest.CloudNativePGFile(t, file), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != gotoken.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if n.Name != name || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == gotoken.STRING {
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					return v
				}
			}
		}
	}
	t.Fatalf("%s@%s: no string constant %s in %s", kubetest.CloudNativePGModule, kubetest.CloudNativePGVersion, name, file)
	return ""
}

// mustContain fails the test unless the pinned module's file has a match
// of the pattern: what the operator does, as its source says it.
func mustContain(t *testing.T, file, pattern, what string) {
	t.Helper()
	if !regexp.MustCompile(pattern).Match(kubetest.CloudNativePGFile(t, file)) {
		t.Errorf("%s@%s %s no longer shows that %s (no match of %q): re-check the overlay against this release",
			kubetest.CloudNativePGModule, kubetest.CloudNativePGVersion, file, what, pattern)
	}
}

// cnpgNames are the names the operator gives what it makes for a Cluster.
type cnpgNames struct {
	appSecret, rwService, caSecret, caKey string
}

// operatorNames reads, from the pinned release's source, the names the
// operator gives a Cluster's application Secret, read-write Service and
// server CA Secret, and checks what the overlay relies on: the application
// Secret's uri names the read-write Service, and the servers' certificate
// covers that name as the uri writes it (<service>.<namespace>).
func operatorNames(t *testing.T, cluster string) cnpgNames {
	t.Helper()
	const types = "api/v1/cluster_types.go"
	n := cnpgNames{
		appSecret: cluster + goStringConst(t, types, "ApplicationUserSecretSuffix"),
		rwService: cluster + goStringConst(t, types, "ServiceReadWriteSuffix"),
		caSecret:  cluster + goStringConst(t, types, "DefaultServerCaSecretSuffix"),
		caKey:     goStringConst(t, "pkg/certs/certs.go", "CACertKey"),
	}
	// The default names hold while the Cluster names no Secret of its own
	// (bootstrap.initdb.secret, certificates.serverCASecret): the strict
	// decode into PostgresCluster refuses those fields.
	mustContain(t, "api/v1/cluster_funcs.go",
		`return fmt\.Sprintf\("%v%v", cluster\.Name, ApplicationUserSecretSuffix\)\n}`,
		"the application Secret is <cluster>-app without a bootstrap secret")
	mustContain(t, "api/v1/cluster_funcs.go",
		`func \(cluster \*Cluster\) GetServiceReadWriteName\(\) string {\n\treturn fmt\.Sprintf\("%v%v", cluster\.Name, ServiceReadWriteSuffix\)`,
		"the read-write Service is <cluster>-rw")
	mustContain(t, "internal/controller/cluster_create.go",
		`appSecret := specs\.CreateSecret\(\s*cluster\.GetApplicationSecretName\(\),\s*cluster\.Namespace,\s*cluster\.GetServiceReadWriteName\(\),`,
		"the application Secret's host is the read-write Service")
	mustContain(t, "pkg/specs/secrets.go",
		`hostWithNamespace := fmt\.Sprintf\("%s\.%s:%d", hostname, namespace, postgres\.ServerPort\)`,
		"the uri's host is <service>.<namespace>")
	mustContain(t, "pkg/specs/secrets.go", `"uri":\s+namespacedBuilder\.buildPostgres\(\)`,
		"the application Secret's uri key holds the URI with that host")
	mustContain(t, "api/v1/cluster_funcs.go",
		`fmt\.Sprintf\("%v\.%v", serviceName, cluster\.Namespace\),`,
		"the servers' certificate names each Service as <service>.<namespace>")
	mustContain(t, "api/v1/cluster_funcs.go",
		`buildServiceNames\(cluster\.GetServiceReadWriteName\(\), cluster\.IsReadWriteServiceEnabled\(\)\)`,
		"the read-write Service is among the certificate's names")
	return n
}

// TestCloudNativePGOverlayUsesTheOperatorsNames checks that plantstore's
// Deployment refers to exactly what the operator makes for the overlay's
// Cluster: its URL from the application Secret's uri (the read-write
// Service), the CA from the server CA Secret, verified by name; and that
// the Cluster asks for the replication docs/kubernetes.md describes.
func TestCloudNativePGOverlayUsesTheOperatorsNames(t *testing.T) {
	m, err := Render(cnpgOverlay)
	if err != nil {
		t.Fatal(err)
	}
	clusters := All[*PostgresCluster](m)
	if len(clusters) != 1 {
		t.Fatalf("want one Cluster, got %d", len(clusters))
	}
	cl := clusters[0]
	names := operatorNames(t, cl.Name)

	// Synchronous replication: a commit is acknowledged once one standby
	// has it, never on the primary alone, and a failover promotes only a
	// standby known to have every acknowledged commit. With ANY n and
	// dataDurability required, a standby's absence stops writes unless
	// there is one standby more than n.
	sync := cl.Spec.PostgreSQL.Synchronous
	if sync == nil || *sync != (PostgresSynchronous{Method: "any", Number: 1, DataDurability: "required", FailoverQuorum: true}) {
		t.Errorf("synchronous %+v, want method any, number 1, dataDurability required, failoverQuorum", sync)
	} else if standbys := cl.Spec.Instances - 1; standbys < sync.Number+1 {
		t.Errorf("%d instances: %d standbys, want %d so that writes go on without one", cl.Spec.Instances, standbys, sync.Number+1)
	}

	d, c := workload(t, m)
	var url *corev1.SecretKeySelector
	for _, e := range c.Env {
		if e.Name == "PLANTSTORE_POSTGRES_URL" && e.ValueFrom != nil {
			url = e.ValueFrom.SecretKeyRef
		}
	}
	if url == nil || url.Name != names.appSecret || url.Key != "uri" || (url.Optional != nil && *url.Optional) {
		t.Errorf("PLANTSTORE_POSTGRES_URL from %+v, want the key uri of the operator's Secret %s (%s's URI)", url, names.appSecret, names.rwService)
	}

	var caDir string
	for _, vm := range c.VolumeMounts {
		v := volumeNamed(d, vm.Name)
		if v == nil || v.Secret == nil || v.Secret.SecretName != names.caSecret {
			continue
		}
		caDir = vm.MountPath
		if !vm.ReadOnly {
			t.Errorf("volume %s is mounted writable", vm.Name)
		}
		// The CA Secret holds the CA's private key as well: only the
		// certificate goes into the pod.
		if items := v.Secret.Items; len(items) != 1 || items[0].Key != names.caKey || items[0].Path != names.caKey {
			t.Errorf("volume %s items %+v, want only %s", vm.Name, items, names.caKey)
		}
		if mode := v.Secret.DefaultMode; mode == nil || *mode&0o007 != 0 {
			t.Errorf("volume %s defaultMode %v: not for others to read", vm.Name, mode)
		}
	}
	if caDir == "" {
		t.Fatalf("no volume of the operator's Secret %s mounted", names.caSecret)
	}
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if cm, ok := Named[*corev1.ConfigMap](m, from.ConfigMapRef.Name); ok {
			maps.Copy(env, cm.Data)
		}
	}
	for k, want := range map[string]string{
		"PGSSLMODE":            "verify-full",
		"PGSSLROOTCERT":        path.Join(caDir, names.caKey),
		"PGTARGETSESSIONATTRS": "read-write",
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}

	// Every replica's pool fits twice (a connection given up while its
	// commit waits keeps its backend): the autoscaler's maximum and a
	// rollout's surge.
	hpas := All[*autoscalingv2.HorizontalPodAutoscaler](m)
	if len(hpas) != 1 {
		t.Fatalf("want one HPA, got %d", len(hpas))
	}
	surge, err := intstr.GetScaledValueFromIntOrPercent(d.Spec.Strategy.RollingUpdate.MaxSurge, int(hpas[0].Spec.MaxReplicas), true)
	if err != nil {
		t.Fatal(err)
	}
	conns, err1 := strconv.Atoi(env["PLANTSTORE_POSTGRES_MAX_CONNS"])
	maxConns, err2 := strconv.Atoi(cl.Spec.PostgreSQL.Parameters["max_connections"])
	if err1 != nil || err2 != nil {
		t.Fatalf("PLANTSTORE_POSTGRES_MAX_CONNS %q, max_connections %q: want numbers", env["PLANTSTORE_POSTGRES_MAX_CONNS"], cl.Spec.PostgreSQL.Parameters["max_connections"])
	}
	if need := (int(hpas[0].Spec.MaxReplicas) + surge) * conns * 2; maxConns < need {
		t.Errorf("max_connections %d, want at least %d", maxConns, need)
	}
}

// TestCloudNativePGClusterSchema applies the overlay's Cluster to the
// control plane with the operator's CRD, and breaks it in the ways the
// schema must refuse: the server, not a decoder of ours, says what the
// operator would be given.
func TestCloudNativePGClusterSchema(t *testing.T) {
	c := newCluster(t)
	needCRDs(t, c, cloudNativePG)
	ns := c.cp.RestrictedNamespace(t, "cnpg-schema")
	cluster := func() *unstructured.Unstructured {
		for _, obj := range render(t, cnpgOverlay) {
			if obj.GetKind() == "Cluster" {
				return obj
			}
		}
		t.Fatal("no Cluster in the overlay")
		return nil
	}

	live := c.mustApply(t, ns, []*unstructured.Unstructured{cluster()})[0]
	got, _, _ := unstructured.NestedMap(live.Object, "spec", "postgresql", "synchronous")
	want := map[string]any{"method": "any", "number": int64(1), "dataDurability": "required", "failoverQuorum": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stored synchronous %v, want %v (a field dropped by the schema?)", got, want)
	}
	if n, _, _ := unstructured.NestedInt64(live.Object, "spec", "instances"); n != 3 {
		t.Errorf("stored instances %d, want 3", n)
	}

	for _, tc := range []struct {
		name    string
		breakIt func(u *unstructured.Unstructured)
		wantErr string
	}{
		{"no standby to wait for", func(u *unstructured.Unstructured) {
			set(t, u, int64(0), "spec", "postgresql", "synchronous", "number")
		}, "The number of synchronous replicas should be greater than zero"},
		{"unknown method", func(u *unstructured.Unstructured) {
			set(t, u, "all", "spec", "postgresql", "synchronous", "method")
		}, `spec.postgresql.synchronous.method: Unsupported value: "all"`},
		{"unknown durability", func(u *unstructured.Unstructured) {
			set(t, u, "strict", "spec", "postgresql", "synchronous", "dataDurability")
		}, `spec.postgresql.synchronous.dataDurability: Unsupported value: "strict"`},
		{"misspelt field", func(u *unstructured.Unstructured) {
			set(t, u, "required", "spec", "postgresql", "synchronous", "dataDurabilty")
		}, `.spec.postgresql.synchronous.dataDurabilty: field not declared in schema`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := cluster()
			tc.breakIt(u)
			a := c.apply(t, ns, []*unstructured.Unstructured{u}, true)[0]
			if a.err == nil || !strings.Contains(a.err.Error(), tc.wantErr) {
				t.Errorf("dry-run apply: err = %v, want one with %q", a.err, tc.wantErr)
			}
		})
	}
}

// standInOperator does, for the Cluster name in ns, the one thing of the
// operator's that `kubectl wait --for=condition=Ready` looks at: once the
// Cluster exists, it reports it Ready. Nothing runs behind it.
func standInOperator(t *testing.T, c *cluster, ns, name string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("postgresql.cnpg.io/v1")
	obj.SetKind("Cluster")
	res, err := c.resource(obj, ns)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			live, err := res.Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				cond := map[string]any{
					"type": "Ready", "status": "True", "reason": "ClusterIsReady",
					"message": "Cluster is Ready", "lastTransitionTime": metav1.Now().UTC().Format("2006-01-02T15:04:05Z"),
				}
				if err := unstructured.SetNestedSlice(live.Object, []any{cond}, "status", "conditions"); err != nil {
					t.Error(err)
					return
				}
				_, err = res.UpdateStatus(ctx, live, metav1.UpdateOptions{})
				if err == nil {
					return
				}
			}
			if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				t.Errorf("stand-in operator: %v", err)
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}

// TestCloudNativePGInstallIsThePinnedRelease checks the doc's install
// command against the release the tests use: it applies that release's
// manifest (from the pinned module: releases/), whose Cluster definition
// is the one the overlay is applied against, and waits for the operator's
// Deployment the manifest makes. The command itself cannot run here: it
// fetches from the internet and would start an operator nothing runs.
func TestCloudNativePGInstallIsThePinnedRelease(t *testing.T) {
	block := docBlock(t, "install-cloudnative-pg")
	release := "cnpg-" + strings.TrimPrefix(kubetest.CloudNativePGVersion, "v") + ".yaml"
	if !strings.Contains(block, "/releases/"+release) {
		t.Errorf("the install command does not name %s:\n%s", release, block)
	}
	var crd, deployment map[string]any
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(kubetest.CloudNativePGFile(t, "releases/"+release)), 1<<20)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		u := unstructured.Unstructured{Object: obj}
		switch {
		case u.GetKind() == "CustomResourceDefinition" && u.GetName() == "clusters.postgresql.cnpg.io":
			crd = obj
		case u.GetKind() == "Deployment":
			deployment = obj
			want := fmt.Sprintf("kubectl -n %s rollout status deployment/%s", u.GetNamespace(), u.GetName())
			if !strings.Contains(block, want) {
				t.Errorf("the install block does not wait for the operator with %q:\n%s", want, block)
			}
		}
	}
	if crd == nil || deployment == nil {
		t.Fatalf("%s: no Cluster CRD or no Deployment", release)
	}
	js, err := yaml.YAMLToJSON(kubetest.CloudNativePGCRD(t, "clusters"))
	if err != nil {
		t.Fatal(err)
	}
	var tested map[string]any
	if err := json.Unmarshal(js, &tested); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(crd["spec"], tested["spec"]) {
		t.Errorf("%s installs another Cluster definition than config/crd/bases, which the tests apply", release)
	}
}
