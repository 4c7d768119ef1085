package k8stest

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// nonName is what a namespace's name cannot hold.
var nonName = regexp.MustCompile(`[^a-z0-9]+`)

// TestBadManifestsAreCaught breaks one field of the default variant's
// Deployment at a time and checks that the API server refuses it or warns:
// what the server does, not what a decoder guesses.
func TestBadManifestsAreCaught(t *testing.T) {
	c := newCluster(t)
	cases := []struct {
		name    string
		breakIt func(t *testing.T, d *unstructured.Unstructured)
		// wantErr is a part of the refusal's message; wantWarning a part of
		// a warning's (the object is then accepted).
		wantErr, wantWarning string
		// podRefused: a pod of the broken template is refused by restricted
		// Pod Security admission.
		podRefused string
		// acceptedSilently: the server takes it without a warning; another
		// test must catch it.
		acceptedSilently bool
	}{
		{
			name: "runAsNonRoot false",
			breakIt: func(t *testing.T, d *unstructured.Unstructured) {
				set(t, d, false, "spec", "template", "spec", "containers", "0", "securityContext", "runAsNonRoot")
			},
			wantWarning: `would violate PodSecurity "restricted:latest": runAsNonRoot != true`,
			podRefused:  `violates PodSecurity "restricted:latest": runAsNonRoot != true`,
		},
		{
			name: "privilege escalation allowed",
			breakIt: func(t *testing.T, d *unstructured.Unstructured) {
				set(t, d, true, "spec", "template", "spec", "containers", "0", "securityContext", "allowPrivilegeEscalation")
			},
			wantWarning: "allowPrivilegeEscalation != false",
			podRefused:  "allowPrivilegeEscalation != false",
		},
		{
			name: "unknown field",
			breakIt: func(t *testing.T, d *unstructured.Unstructured) {
				set(t, d, "IfNotPresent", "spec", "template", "spec", "containers", "0", "imagePullPolicyy")
			},
			wantErr: `.spec.template.spec.containers[name="plantstore"].imagePullPolicyy: field not declared in schema`,
		},
		{
			name: "probe port removed",
			breakIt: func(t *testing.T, d *unstructured.Unstructured) {
				unset(t, d, "spec", "template", "spec", "containers", "0", "readinessProbe", "httpGet", "port")
			},
			wantErr: "spec.template.spec.containers[0].readinessProbe.httpGet.port: Invalid value: 0: must be between 1 and 65535, inclusive",
		},
		{
			// The probes name the container port "admin"; with the port gone
			// they name nothing, and the API server does not check that a
			// probe's named port exists: it accepts this without a word. The
			// decode test TestPortsAndProbes (manifests_test.go) catches it.
			name: "probes' named port removed",
			breakIt: func(t *testing.T, d *unstructured.Unstructured) {
				set(t, d, []any{map[string]any{"name": "http", "containerPort": int64(8080), "protocol": "TCP"}},
					"spec", "template", "spec", "containers", "0", "ports")
			},
			acceptedSilently: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := c.cp.RestrictedNamespace(t, "bad-"+nonName.ReplaceAllString(strings.ToLower(tc.name), "-"))
			var d *unstructured.Unstructured
			for _, obj := range render(t, "deploy/k8s") {
				if obj.GetKind() == "Deployment" {
					d = obj
				}
			}
			tc.breakIt(t, d)
			// The rest first: the pods' ServiceAccount must exist for the
			// pod admission check below.
			var rest []*unstructured.Unstructured
			for _, obj := range render(t, "deploy/k8s") {
				if obj.GetKind() != "Deployment" {
					rest = append(rest, obj)
				}
			}
			c.mustApply(t, ns, rest)
			a := c.apply(t, ns, []*unstructured.Unstructured{d}, false)[0]
			switch {
			case tc.acceptedSilently:
				if a.err != nil || len(a.warnings) > 0 {
					t.Errorf("apply: err %v, warnings %q; the API server was not known to catch this", a.err, a.warnings)
				}
			case tc.wantErr != "":
				if a.err == nil || !strings.Contains(a.err.Error(), tc.wantErr) {
					t.Errorf("apply: err = %v, want one with %q", a.err, tc.wantErr)
				}
			case a.err != nil:
				t.Errorf("apply: %v", a.err)
			case !slices.ContainsFunc(a.warnings, func(w string) bool { return strings.Contains(w, tc.wantWarning) }):
				t.Errorf("apply: warnings %q, want one with %q", a.warnings, tc.wantWarning)
			}
			if tc.podRefused != "" {
				checkPodRefused(t, c, ns, d, tc.podRefused)
			}
		})
	}
}

// checkPodRefused creates a pod from the Deployment's template, as the
// ReplicaSet controller would, and expects restricted Pod Security
// admission to refuse it.
func checkPodRefused(t *testing.T, c *cluster, ns string, d *unstructured.Unstructured, want string) {
	t.Helper()
	tmpl, _, err := unstructured.NestedMap(d.Object, "spec", "template")
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, pod); err != nil {
		t.Fatal(err)
	}
	pod.Name = "refused"
	_, err = c.cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("create a pod of the template: %v, want Forbidden with %q", err, want)
	}
}

// set sets a field at a path of map keys and list indexes.
func set(t *testing.T, u *unstructured.Unstructured, value any, path ...string) {
	t.Helper()
	parent, last := walk(t, u.Object, path)
	parent[last] = value
}

// unset removes the field at a path.
func unset(t *testing.T, u *unstructured.Unstructured, path ...string) {
	t.Helper()
	parent, last := walk(t, u.Object, path)
	if _, ok := parent[last]; !ok {
		t.Fatalf("no field %v", path)
	}
	delete(parent, last)
}

func walk(t *testing.T, obj map[string]any, path []string) (map[string]any, string) {
	t.Helper()
	var cur any = obj
	for _, p := range path[:len(path)-1] {
		switch v := cur.(type) {
		case map[string]any:
			cur = v[p]
		case []any:
			i := int(p[0] - '0')
			cur = v[i]
		}
	}
	m, ok := cur.(map[string]any)
	if !ok {
		t.Fatalf("%v: not an object", path)
	}
	return m, path[len(path)-1]
}
