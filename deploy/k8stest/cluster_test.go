package k8stest

// Helpers of the tests that apply the manifests to a real control plane
// (internal/kubetest). They apply through client-go's server-side apply
// with the objects kustomize's Go API renders, the render `kubectl apply -k`
// makes: each request's warnings (Pod Security, deprecated APIs, unknown
// fields) are recorded per object by a rest.WarningHandler, and errors come
// back typed. The commands of docs/kubernetes.md run through a real kubectl
// (doc_test.go).

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/plantstore/plantstore/internal/kubetest"
	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/internal/repo"
)

// fieldManager owns the fields the tests apply, as "kubectl" would own a
// user's.
const fieldManager = "plantstore-test"

// waitTimeout only keeps a broken controller from hanging the test; the
// tests wait for conditions, never for time.
const waitTimeout = 3 * time.Minute

// warnings records the API server's Warning headers.
type warnings struct {
	mu   sync.Mutex
	text []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

// take returns the warnings recorded since the last take.
func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.text
	w.text = nil
	return out
}

// cluster is a test's view of the shared control plane.
type cluster struct {
	cp       *kubetest.ControlPlane
	cs       *kubernetes.Clientset
	dyn      *dynamic.DynamicClient
	mapper   meta.ResettableRESTMapper
	warnings *warnings
	mu       sync.Mutex // one apply at a time: warnings are per request
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	cp := kubetest.Shared(t)
	c := &cluster{cp: cp, warnings: &warnings{}}
	config := cp.RESTConfig()
	config.WarningHandler = c.warnings
	var err error
	if c.cs, err = kubernetes.NewForConfig(config); err != nil {
		t.Fatal(err)
	}
	if c.dyn, err = dynamic.NewForConfig(config); err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return c
}

// render renders a kustomization (relative to the repository root) into
// objects to apply.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	data, err := RenderJSON(filepath.Join(root, dir))
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	for _, d := range data {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(d); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, u)
	}
	return objs
}

// id names an object in messages.
func id(u *unstructured.Unstructured) string { return u.GetKind() + "/" + u.GetName() }

// applied is the answer to one object's apply.
type applied struct {
	obj      *unstructured.Unstructured // the object as the server stored (or would store) it
	warnings []string
	err      error
}

// apply applies each object server-side into the namespace, as
// `kubectl apply --server-side` does (no force: a conflict is an error),
// and returns each answer in order.
func (c *cluster) apply(t *testing.T, ns string, objs []*unstructured.Unstructured, dryRun bool) []applied {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.warnings.take()
	opts := metav1.ApplyOptions{FieldManager: fieldManager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var out []applied
	for _, obj := range objs {
		res, err := c.resource(obj, ns)
		var a applied
		if err == nil {
			a.obj, a.err = res.Apply(context.Background(), obj.GetName(), obj, opts)
		} else {
			a.err = err
		}
		a.warnings = c.warnings.take()
		out = append(out, a)
	}
	return out
}

// resource is the dynamic client for the object's kind, in ns when the
// kind is namespaced.
func (c *cluster) resource(obj *unstructured.Unstructured, ns string) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		c.mapper.Reset() // a CRD installed since the last discovery
		if m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			return nil, err
		}
	}
	if m.Scope.Name() == meta.RESTScopeNameRoot {
		return c.dyn.Resource(m.Resource), nil
	}
	return c.dyn.Resource(m.Resource).Namespace(ns), nil
}

// mustApply applies the objects and fails the test on any error or
// warning.
func (c *cluster) mustApply(t *testing.T, ns string, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for i, a := range c.apply(t, ns, objs, false) {
		if a.err != nil {
			t.Fatalf("apply %s: %v", id(objs[i]), a.err)
		}
		if len(a.warnings) > 0 {
			t.Errorf("apply %s: warnings: %q", id(objs[i]), a.warnings)
		}
		out = append(out, a.obj)
	}
	return out
}

// diff applies the objects with a server-side dry run and returns, per
// object, how the result differs from the live object: what `kubectl
// diff --server-side` shows. A controller may write an object between the
// read and the dry run; then the pair is read again.
func (c *cluster) diff(t *testing.T, ns string, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	diffs := map[string]string{}
	for _, obj := range objs {
		res, err := c.resource(obj, ns)
		if err != nil {
			t.Fatal(err)
		}
		for attempt := 0; ; attempt++ {
			live, err := res.Get(context.Background(), obj.GetName(), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get %s: %v", id(obj), err)
			}
			a := c.apply(t, ns, []*unstructured.Unstructured{obj}, true)[0]
			if a.err != nil {
				t.Fatalf("dry-run apply %s: %v", id(obj), a.err)
			}
			if len(a.warnings) > 0 {
				t.Errorf("dry-run apply %s: warnings: %q", id(obj), a.warnings)
			}
			if a.obj.GetResourceVersion() != live.GetResourceVersion() && attempt < 10 {
				continue // written in between (a controller's status): read again
			}
			if d := diffObjects(live.Object, a.obj.Object, ""); d != "" {
				diffs[id(obj)] = d
			}
			break
		}
	}
	return diffs
}

// diffObjects lists, one a line in sorted order, the paths (".spec.x.0.y")
// where two decoded JSON values differ, and how.
func diffObjects(a, b any, path string) string {
	var out []string
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	al, alok := a.([]any)
	bl, blok := b.([]any)
	switch {
	case aok && bok:
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			if d := diffObjects(am[k], bm[k], path+"."+k); d != "" {
				out = append(out, d)
			}
		}
	case alok && blok && len(al) == len(bl):
		for i := range al {
			if d := diffObjects(al[i], bl[i], path+"."+strconv.Itoa(i)); d != "" {
				out = append(out, d)
			}
		}
	case !reflect.DeepEqual(a, b):
		aj, _ := json.Marshal(a)
		bj, _ := json.Marshal(b)
		out = append(out, fmt.Sprintf("%s: %s -> %s", path, aj, bj))
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// waitFor polls check every 100 ms until it returns true; a check that
// returns an error other than NotFound (an object not made yet) fails the
// test. Bounded by waitTimeout, a guard against a hang, not a timing
// assertion.
func waitFor(t *testing.T, what string, check func() (bool, error)) {
	t.Helper()
	poll.Wait(t, 100*time.Millisecond, waitTimeout, what, func() (bool, error) {
		ok, err := check()
		if !ok && err != nil && !apierrors.IsNotFound(err) {
			return false, poll.Stop(err)
		}
		return ok, err
	})
}

// pods lists the namespace's pods with the Deployment's selector.
func (c *cluster) pods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	list, err := c.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/name=plantstore,app.kubernetes.io/instance=plantstore",
	})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}
