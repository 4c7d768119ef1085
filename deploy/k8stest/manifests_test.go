package k8stest

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/plantstore/plantstore/internal/repo"
	httpserver "github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/plants"
)

// nonroot is the distroless image's nonroot user and group.
const nonroot = 65532

// rendered returns every kustomization, rendered once per test binary.
func rendered(t *testing.T) map[string]*Manifests {
	t.Helper()
	all, err := RenderAll()
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// forEach runs check on every kustomization's rendering.
func forEach(t *testing.T, check func(t *testing.T, k Kustomization, m *Manifests)) {
	all := rendered(t)
	for _, k := range Kustomizations {
		t.Run(k.Name, func(t *testing.T) { check(t, k, all[k.Name]) })
	}
}

// workload returns the one Deployment and its one container.
func workload(t *testing.T, m *Manifests) (*appsv1.Deployment, *corev1.Container) {
	t.Helper()
	d, c, err := m.Workload()
	if err != nil {
		t.Fatal(err)
	}
	return d, c
}

// TestEveryKustomizationIsRendered keeps the list of rendered variants
// complete: a new overlay or component under deploy/k8s needs its place
// in Kustomizations (a component through a testdata kustomization).
func TestEveryKustomizationIsRendered(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{
		"deploy/k8s/base":                  true, // the resources of every variant
		"deploy/k8s/components/monitoring": true, // in the two testdata variants
	}
	for _, k := range Kustomizations {
		covered[k.Dir] = true
	}
	err = filepath.WalkDir(filepath.Join(root, "deploy/k8s"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "kustomization.yaml" {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		if !covered[filepath.ToSlash(rel)] {
			t.Errorf("%s is not rendered by the tests: add it to k8stest.Kustomizations", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestObjectsAreLabelledAndUnique(t *testing.T) {
	forEach(t, func(t *testing.T, k Kustomization, m *Manifests) {
		seen := map[string]bool{}
		for _, obj := range m.Objects {
			id := obj.Kind + " " + obj.Meta.GetName()
			if seen[id] {
				t.Errorf("%s appears twice", id)
			}
			seen[id] = true
			if ns := obj.Meta.GetNamespace(); ns != "" {
				t.Errorf("%s: namespace %q: leave it to kubectl -n", id, ns)
			}
			l := obj.Meta.GetLabels()
			want := map[string]string{
				"app.kubernetes.io/name":       "plantstore",
				"app.kubernetes.io/instance":   "plantstore",
				"app.kubernetes.io/part-of":    "plantstore",
				"app.kubernetes.io/managed-by": "kustomize",
			}
			if _, ok := obj.Value.(*PostgresCluster); ok {
				// The database is a part of plantstore, not plantstore: an
				// operator that passes the Cluster's labels on to its pods
				// must not put them under plantstore's selectors.
				want["app.kubernetes.io/name"] = "postgresql"
				want["app.kubernetes.io/instance"] = obj.Meta.GetName()
			}
			for key, want := range want {
				if l[key] != want {
					t.Errorf("%s: label %s = %q, want %q", id, key, l[key], want)
				}
			}
			if l["app.kubernetes.io/component"] == "" {
				t.Errorf("%s: no app.kubernetes.io/component label", id)
			}
		}
		d, _ := workload(t, m)
		for key, v := range d.Labels {
			if d.Spec.Template.Labels[key] != v {
				t.Errorf("pod template label %s = %q, want the Deployment's %q", key, d.Spec.Template.Labels[key], v)
			}
		}
	})
}

func TestSelectorsMatchThePods(t *testing.T) {
	forEach(t, func(t *testing.T, k Kustomization, m *Manifests) {
		d, _ := workload(t, m)
		pod := labels.Set(d.Spec.Template.Labels)
		matches := func(what string, sel *metav1.LabelSelector) {
			t.Helper()
			s, err := metav1.LabelSelectorAsSelector(sel)
			switch {
			case err != nil:
				t.Errorf("%s: %v", what, err)
			case s.Empty():
				t.Errorf("%s selects everything", what)
			case !s.Matches(pod):
				t.Errorf("%s %v does not match the pods' labels %v", what, s, pod)
			}
		}
		matches("Deployment selector", d.Spec.Selector)
		for key := range d.Spec.Selector.MatchLabels {
			if strings.Contains(key, "version") || strings.Contains(key, "component") {
				t.Errorf("Deployment selector uses %s: selectors are immutable, keep them to name and instance", key)
			}
		}
		for _, svc := range All[*corev1.Service](m) {
			matches("Service "+svc.Name, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
		}
		for _, np := range All[*networkingv1.NetworkPolicy](m) {
			matches("NetworkPolicy "+np.Name, &np.Spec.PodSelector)
		}
		for _, pdb := range All[*policyv1.PodDisruptionBudget](m) {
			matches("PodDisruptionBudget "+pdb.Name, pdb.Spec.Selector)
		}
		for i, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
			matches(fmt.Sprintf("topologySpreadConstraints[%d]", i), c.LabelSelector)
		}
		for _, hpa := range All[*autoscalingv2.HorizontalPodAutoscaler](m) {
			ref := hpa.Spec.ScaleTargetRef
			if ref.APIVersion != "apps/v1" || ref.Kind != "Deployment" || ref.Name != d.Name {
				t.Errorf("HPA %s scales %s %s %s, want the Deployment %s", hpa.Name, ref.APIVersion, ref.Kind, ref.Name, d.Name)
			}
		}
	})
}

func TestPodSecurity(t *testing.T) {
	forEach(t, func(t *testing.T, k Kustomization, m *Manifests) {
		d, c := workload(t, m)
		spec := d.Spec.Template.Spec
		if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
			t.Error("pod: automountServiceAccountToken must be false")
		}
		sa, ok := Named[*corev1.ServiceAccount](m, spec.ServiceAccountName)
		if !ok {
			t.Fatalf("ServiceAccount %q of the pod is not in the manifests", spec.ServiceAccountName)
		}
		if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
			t.Error("ServiceAccount: automountServiceAccountToken must be false")
		}
		if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
			t.Error("enableServiceLinks must be false: Kubernetes would set PLANTSTORE_* variables for the Service")
		}
		for _, e := range c.Env {
			if e.Name == "GOMEMLIMIT" {
				// The binary sets the soft limit to 90% of the cgroup's
				// limit itself; an explicit one, even equal to the limit,
				// switches that off and leaves the GC no room before the kill.
				t.Error("the container must not set GOMEMLIMIT")
			}
		}
		if spec.HostNetwork || spec.HostPID || spec.HostIPC {
			t.Error("the pod must not share the host's namespaces")
		}

		psc, csc := spec.SecurityContext, c.SecurityContext
		if psc == nil || csc == nil {
			t.Fatal("both the pod and the container need a securityContext")
		}
		// The container's setting wins over the pod's, as in Kubernetes.
		effective := func(container, pod *int64) *int64 {
			if container != nil {
				return container
			}
			return pod
		}
		if v := effective(csc.RunAsUser, psc.RunAsUser); v == nil || *v != nonroot {
			t.Errorf("runAsUser = %v, want %d", deref(v), nonroot)
		}
		if v := effective(csc.RunAsGroup, psc.RunAsGroup); v == nil || *v != nonroot {
			t.Errorf("runAsGroup = %v, want %d", deref(v), nonroot)
		}
		if psc.FSGroup == nil || *psc.FSGroup != nonroot {
			t.Errorf("fsGroup = %v, want %d: the volumes must be writable by the nonroot group", deref(psc.FSGroup), nonroot)
		}
		nonRoot := csc.RunAsNonRoot
		if nonRoot == nil {
			nonRoot = psc.RunAsNonRoot
		}
		if nonRoot == nil || !*nonRoot {
			t.Error("runAsNonRoot must be true")
		}
		seccomp := csc.SeccompProfile
		if seccomp == nil {
			seccomp = psc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("seccompProfile = %+v, want RuntimeDefault", seccomp)
		}
		if csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem {
			t.Error("readOnlyRootFilesystem must be true")
		}
		if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
			t.Error("allowPrivilegeEscalation must be false")
		}
		if csc.Privileged != nil && *csc.Privileged {
			t.Error("privileged must not be true")
		}
		if csc.Capabilities == nil || !slices.Equal(csc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(csc.Capabilities.Add) > 0 {
			t.Errorf("capabilities = %+v, want drop [ALL] and nothing added", csc.Capabilities)
		}
	})
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestResources(t *testing.T) {
	forEach(t, func(t *testing.T, k Kustomization, m *Manifests) {
		_, c := workload(t, m)
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, hasReq := c.Resources.Requests[name]
			limit, hasLimit := c.Resources.Limits[name]
			if !hasReq || !hasLimit || req.IsZero() || limit.IsZero() {
				t.Errorf("%s: want a request and a limit, got %v and %v", name, c.Resources.Requests, c.Resources.Limits)
				continue
			}
			if req.Cmp(limit) > 0 {
				t.Errorf("%s: request %s exceeds limit %s", name, req.String(), limit.String())
			}
		}
	})
}

// TestImage: every variant deploys the latest release's image, the tag
// `make docker-build` gives it at the release's git tag (v0.1.0), never
// :latest, which names whatever was built last. Users point it at their
// registry with kustomize's images: (docs/kubernetes.md).
func TestImage(t *testing.T) {
	release, err := repo.LatestRelease()
	if err != nil {
		t.Fatal(err)
	}
	want := "plantstore:v" + release
	forEach(t, func(t *testing.T, k Kustomization, m *Manifests) {
		_, c := workload(t, m)
		if c.Image != want {
			t.Errorf("image %q, want %s, the latest release in CHANGELOG.md", c.Image, want)
		}
		if c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("imagePullPolicy %q, want IfNotPresent (an image loaded into the cluster must not be pulled)", c.ImagePullPolicy)
		}
	})
}

// TestPortsAndProbes checks the names that tie the objects together; the
// numbers and paths are checked against the program in cmd/plantstore.
func TestPortsAndProbes(t *testing.T) {
	forEach(t, func(t *testing.T, k Kustomization, m *Manifests) {
		d, c := workload(t, m)
		ports := map[string]int32{}
		for _, p := range c.Ports {
			ports[p.Name] = p.ContainerPort
		}
		if len(ports) != 2 || ports["http"] == 0 || ports["admin"] == 0 {
			t.Fatalf("container ports %v, want http and admin", c.Ports)
		}
		resolve := func(what string, port intstr.IntOrString) int32 {
			t.Helper()
			if port.Type == intstr.String {
				n, ok := ports[port.StrVal]
				if !ok {
					t.Errorf("%s: port %q is not a container port", what, port.StrVal)
				}
				return n
			}
			return port.IntVal
		}

		for _, p := range []struct {
			name  string
			probe *corev1.Probe
			path  string
		}{
			// Liveness must not ask the store: a database outage would
			// get every replica restarted.
			{"startupProbe", c.StartupProbe, httpserver.LivezPath},
			{"livenessProbe", c.LivenessProbe, httpserver.LivezPath},
			{"readinessProbe", c.ReadinessProbe, httpserver.ReadyzPath},
		} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("%s: want an httpGet probe", p.name)
				continue
			}
			if p.probe.HTTPGet.Path != p.path {
				t.Errorf("%s: path %q, want %q", p.name, p.probe.HTTPGet.Path, p.path)
			}
			if got := resolve(p.name, p.probe.HTTPGet.Port); got != ports["admin"] {
				t.Errorf("%s: port %v, want the admin port %d", p.name, p.probe.HTTPGet.Port.String(), ports["admin"])
			}
		}

		ann := d.Spec.Template.Annotations
		if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != strconv.Itoa(int(ports["admin"])) || ann["prometheus.io/path"] == "" {
			t.Errorf("pod annotations %v: want prometheus.io/scrape true, port %d (admin) and a path", ann, ports["admin"])
		}

		svc, ok := Named[*corev1.Service](m, "plantstore")
		if !ok {
			t.Fatal("no Service plantstore")
		}
		svcTargets := map[string]int32{}
		for _, p := range svc.Spec.Ports {
			if p.TargetPort.Type != intstr.String {
				t.Errorf("Service port %s: target port %v, want a container port's name", p.Name, p.TargetPort.String())
			}
			svcTargets[p.Name] = resolve("Service port "+p.Name, p.TargetPort)
		}
		if want := map[string]int32{"http": ports["http"], "metrics": ports["admin"]}; !mapsEqual(svcTargets, want) {
			t.Errorf("Service ports reach container ports %v, want %v", svcTargets, want)
		}

		for _, np := range All[*networkingv1.NetworkPolicy](m) {
			if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
				t.Errorf("NetworkPolicy %s does not restrict ingress", np.Name)
			}
			allowed := map[int32]bool{}
			for _, rule := range np.Spec.Ingress {
				for _, p := range rule.Ports {
					if p.Port == nil {
						t.Errorf("NetworkPolicy %s allows every port", np.Name)
						continue
					}
					allowed[resolve("NetworkPolicy "+np.Name, *p.Port)] = true
				}
			}
			if !allowed[ports["http"]] || !allowed[ports["admin"]] || len(allowed) != 2 {
				t.Errorf("NetworkPolicy %s admits ports %v, want exactly http and admin", np.Name, allowed)
			}
		}
	})
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestShutdown(t *testing.T) {
	forEach(t, func(t *testing.T, k Kustomization, m *Manifests) {
		d, c := workload(t, m)
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
			t.Fatal("want a preStop sleep: the image has no shell for an exec hook")
		}
		if s := c.Lifecycle.PreStop.Sleep.Seconds; s <= 0 {
			t.Errorf("preStop sleep %ds, want a pause", s)
		}
		// The whole sum (with the program's drain and shutdown timeout) is
		// checked against the program's settings in cmd/plantstore.
		if g := d.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g <= c.Lifecycle.PreStop.Sleep.Seconds {
			t.Errorf("terminationGracePeriodSeconds %v, want more than the preStop sleep", deref(g))
		}
	})
}

func TestVolumes(t *testing.T) {
	forEach(t, func(t *testing.T, k Kustomization, m *Manifests) {
		d, c := workload(t, m)
		volumes := map[string]corev1.Volume{}
		for _, v := range d.Spec.Template.Spec.Volumes {
			volumes[v.Name] = v
		}
		mounted := map[string]bool{}
		for _, vm := range c.VolumeMounts {
			mounted[vm.Name] = true
			if _, ok := volumes[vm.Name]; !ok {
				t.Errorf("volumeMount %s: no such volume", vm.Name)
			}
			if vm.SubPath != "" {
				t.Errorf("volumeMount %s uses subPath: Kubernetes never updates those", vm.Name)
			}
		}
		for name := range volumes {
			if !mounted[name] {
				t.Errorf("volume %s is not mounted", name)
			}
		}
		tokens := volumes["tokens"]
		if tokens.Secret == nil || tokens.Secret.SecretName != "plantstore-tokens" {
			t.Errorf("volume tokens = %+v, want the Secret plantstore-tokens", tokens.VolumeSource)
		} else if mode := tokens.Secret.DefaultMode; mode == nil || *mode&0o007 != 0 {
			t.Errorf("tokens defaultMode %v: tokens must not be world-readable", mode)
		}
		for _, vm := range c.VolumeMounts {
			if vm.Name == "tokens" && !vm.ReadOnly {
				t.Error("the tokens volume must be mounted read-only")
			}
		}
	})
}

// TestStoreVariants checks what sets the two variants apart.
func TestStoreVariants(t *testing.T) {
	forEach(t, func(t *testing.T, k Kustomization, m *Manifests) {
		d, _ := workload(t, m)
		hpas := All[*autoscalingv2.HorizontalPodAutoscaler](m)
		pdbs := All[*policyv1.PodDisruptionBudget](m)
		pvcs := All[*corev1.PersistentVolumeClaim](m)
		switch k.Store {
		case plants.StoreBolt:
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
				t.Errorf("replicas %v, want 1: one process owns the bolt file", d.Spec.Replicas)
			}
			if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
				t.Errorf("strategy %q, want Recreate: a rolling update would start a second process on the bolt file", d.Spec.Strategy.Type)
			}
			if len(hpas) != 0 || len(pdbs) != 0 {
				t.Error("the single-replica variant must not autoscale or carry a disruption budget")
			}
			data := volumeNamed(d, "data")
			if data == nil || data.PersistentVolumeClaim == nil {
				t.Fatal("want a volume data from a PersistentVolumeClaim")
			}
			pvc, ok := Named[*corev1.PersistentVolumeClaim](m, data.PersistentVolumeClaim.ClaimName)
			if !ok || len(pvcs) != 1 {
				t.Fatalf("want the one PersistentVolumeClaim %s in the manifests", data.PersistentVolumeClaim.ClaimName)
			}
			if !slices.Equal(pvc.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) {
				t.Errorf("PVC access modes %v, want ReadWriteOnce", pvc.Spec.AccessModes)
			}
			if size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; size.IsZero() {
				t.Error("PVC requests no storage")
			}
		case plants.StorePostgres:
			if d.Spec.Replicas != nil {
				t.Errorf("replicas %d: leave the count to the HPA, or every kubectl apply resets it", *d.Spec.Replicas)
			}
			if len(hpas) != 1 || hpas[0].Spec.MinReplicas == nil || *hpas[0].Spec.MinReplicas != 3 || hpas[0].Spec.MaxReplicas < 3 {
				t.Errorf("want one HPA with minReplicas 3, got %d", len(hpas))
			}
			ru := d.Spec.Strategy.RollingUpdate
			if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil ||
				ru.MaxUnavailable == nil || ru.MaxUnavailable.String() != "0" || ru.MaxSurge == nil || ru.MaxSurge.String() == "0" {
				t.Errorf("strategy %+v, want RollingUpdate with maxUnavailable 0 and a surge", d.Spec.Strategy)
			}
			if len(pdbs) != 1 || (pdbs[0].Spec.MinAvailable == nil) == (pdbs[0].Spec.MaxUnavailable == nil) {
				t.Error("want one PodDisruptionBudget with either minAvailable or maxUnavailable")
			}
			keys := map[string]bool{}
			for _, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
				keys[c.TopologyKey] = true
			}
			if !keys[corev1.LabelTopologyZone] || !keys[corev1.LabelHostname] {
				t.Errorf("topology spread over %v, want zones and nodes", keys)
			}
			if len(pvcs) != 0 {
				t.Error("the replicas are stateless: no PersistentVolumeClaim")
			}
			for _, v := range d.Spec.Template.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					t.Errorf("volume %s: no PersistentVolumeClaim for stateless replicas", v.Name)
				}
			}
		default:
			t.Fatalf("store %q", k.Store)
		}
	})
}

func volumeNamed(d *appsv1.Deployment, name string) *corev1.Volume {
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == name {
			return &d.Spec.Template.Spec.Volumes[i]
		}
	}
	return nil
}

func TestConfigMapsExist(t *testing.T) {
	forEach(t, func(t *testing.T, k Kustomization, m *Manifests) {
		_, c := workload(t, m)
		for _, from := range c.EnvFrom {
			if from.ConfigMapRef == nil {
				t.Errorf("envFrom %+v: want only ConfigMaps (Secrets go in through env, one key each)", from)
				continue
			}
			if _, ok := Named[*corev1.ConfigMap](m, from.ConfigMapRef.Name); !ok {
				t.Errorf("envFrom ConfigMap %s is not in the manifests", from.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if ref := e.ValueFrom; ref != nil && ref.ConfigMapKeyRef != nil {
				cm, ok := Named[*corev1.ConfigMap](m, ref.ConfigMapKeyRef.Name)
				if !ok || cm.Data[ref.ConfigMapKeyRef.Key] == "" {
					t.Errorf("env %s: ConfigMap key %s/%s is not in the manifests", e.Name, ref.ConfigMapKeyRef.Name, ref.ConfigMapKeyRef.Key)
				}
			}
		}
	})
}
