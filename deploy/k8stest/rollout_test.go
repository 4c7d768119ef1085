package k8stest

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/plantstore/plantstore/internal/kubetest"
)

// TestPostgresOverlayInAction applies the postgres overlay, has a stand-in
// kubelet report its pods running (internal/kubetest: nothing runs them),
// and follows what the controllers make of the objects: the autoscaler
// scales to its minimum, the disruption budget, the NetworkPolicy and the
// Service select those pods, the Service's endpoints follow readiness, and
// a new image rolls out by changing the pod template alone.
func TestPostgresOverlayInAction(t *testing.T) {
	c := newCluster(t)
	ns := c.cp.RestrictedNamespace(t, "in-action")
	c.cp.RunPods(t, ns)
	objs := render(t, "deploy/k8s/overlays/postgres")
	c.mustApply(t, ns, objs)
	ctx := context.Background()

	var d *appsv1.Deployment
	waitFor(t, "three available replicas", func() (bool, error) {
		var err error
		d, err = c.cs.AppsV1().Deployments(ns).Get(ctx, "plantstore", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 3 && d.Status.Replicas == 3, err
	})
	pods := c.pods(t, ns)
	podNames := names(pods)

	t.Run("autoscaler", func(t *testing.T) {
		scale, err := c.cs.AppsV1().Deployments(ns).GetScale(ctx, "plantstore", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkSelects(t, c, ns, "the autoscaler's scale target", scale.Status.Selector, podNames)
	})
	t.Run("disruption budget", func(t *testing.T) {
		waitFor(t, "the PodDisruptionBudget to count the pods", func() (bool, error) {
			pdb, err := c.cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "plantstore", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			s := pdb.Status
			return s.ObservedGeneration == pdb.Generation && s.ExpectedPods == 3 && s.CurrentHealthy == 3 &&
				s.DesiredHealthy == 2 && s.DisruptionsAllowed == 1, nil
		})
	})
	t.Run("network policy", func(t *testing.T) {
		np, err := c.cs.NetworkingV1().NetworkPolicies(ns).Get(ctx, "plantstore", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		checkSelects(t, c, ns, "the NetworkPolicy", sel.String(), podNames)
		// Its ports are named: each must name a port of the pods.
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if !slices.ContainsFunc(pods[0].Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.Port.StrVal }) {
					t.Errorf("NetworkPolicy port %s: no such container port", p.Port)
				}
			}
		}
	})
	t.Run("endpoints follow readiness", func(t *testing.T) {
		checkEndpoints(t, c, ns, pods, nil)
		unready := pods[0]
		if _, err := kubetest.StandInKubelet(ctx, c.cs, &unready, false); err != nil {
			t.Fatal(err)
		}
		checkEndpoints(t, c, ns, pods, &unready)
		if _, err := kubetest.StandInKubelet(ctx, c.cs, &unready, true); err != nil {
			t.Fatal(err)
		}
		checkEndpoints(t, c, ns, pods, nil)
	})
	t.Run("rolling update of the image", func(t *testing.T) {
		checkImageRollout(t, c, ns, objs)
	})
}

func names(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

// checkSelects checks that a label selector picks exactly the given pods.
func checkSelects(t *testing.T, c *cluster, ns, what, selector string, want []string) {
	t.Helper()
	if _, err := labels.Parse(selector); err != nil || selector == "" {
		t.Fatalf("%s: selector %q: %v", what, selector, err)
	}
	list, err := c.cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(list.Items); !slices.Equal(got, want) {
		t.Errorf("%s (%s) selects %v, want %v", what, selector, got, want)
	}
}

// checkEndpoints waits until the Service's EndpointSlices list every pod's
// address, ready except unready's.
func checkEndpoints(t *testing.T, c *cluster, ns string, pods []corev1.Pod, unready *corev1.Pod) {
	t.Helper()
	want := map[string]bool{}
	for _, p := range pods {
		live, err := c.cs.CoreV1().Pods(ns).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want[live.Status.PodIP] = unready == nil || p.Name != unready.Name
	}
	var got map[string]bool
	waitFor(t, "the EndpointSlices to follow readiness", func() (bool, error) {
		slices, err := c.cs.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=plantstore",
		})
		if err != nil {
			return false, err
		}
		got = map[string]bool{}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				ready := e.Conditions.Ready != nil && *e.Conditions.Ready
				for _, a := range e.Addresses {
					got[a] = ready
				}
			}
		}
		return maps.Equal(got, want), nil
	})
}

// checkImageRollout applies the same objects with only the image changed:
// the Deployment's spec changes in its pod template's image alone, no
// other object changes, and the controller replaces the ReplicaSet with
// one whose template differs in the image (and kubernetes' hash label).
func checkImageRollout(t *testing.T, c *cluster, ns string, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := context.Background()
	live := map[string]*unstructured.Unstructured{}
	for _, obj := range objs {
		res, err := c.resource(obj, ns)
		if err != nil {
			t.Fatal(err)
		}
		if live[id(obj)], err = res.Get(ctx, obj.GetName(), metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const newImage = "plantstore:v0.1.1"
	var updated []*unstructured.Unstructured
	for _, obj := range objs {
		obj = obj.DeepCopy()
		if obj.GetKind() == "Deployment" {
			set(t, obj, newImage, "spec", "template", "spec", "containers", "0", "image")
		}
		updated = append(updated, obj)
	}
	after := c.mustApply(t, ns, updated)
	for i, obj := range updated {
		d := diffObjects(content(live[id(obj)]), content(after[i]), "")
		if obj.GetKind() == "Deployment" {
			want := `.spec.template.spec.containers.0.image: "plantstore:v0.1.0" -> "plantstore:v0.1.1"`
			if d != want {
				t.Errorf("Deployment: the apply changed\n%s\nwant only\n%s", d, want)
			}
			continue
		}
		if d != "" || !sameFields(live[id(obj)], after[i]) {
			t.Errorf("%s: changed by an image update:\n%s", id(obj), d)
		}
	}
	waitFor(t, "the rollout to finish", func() (bool, error) {
		d, err := c.cs.AppsV1().Deployments(ns).Get(ctx, "plantstore", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == 3 && s.Replicas == 3 && s.AvailableReplicas == 3, nil
	})
	rss, err := c.cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rss.Items) != 2 {
		t.Fatalf("%d ReplicaSets, want the old and the new", len(rss.Items))
	}
	oldRS, newRS := rss.Items[0], rss.Items[1]
	if oldRS.Spec.Template.Spec.Containers[0].Image == newImage {
		oldRS, newRS = newRS, oldRS
	}
	if *oldRS.Spec.Replicas != 0 || *newRS.Spec.Replicas != 3 || newRS.Spec.Template.Spec.Containers[0].Image != newImage {
		t.Errorf("old ReplicaSet %d replicas, new %d with %s", *oldRS.Spec.Replicas, *newRS.Spec.Replicas, newRS.Spec.Template.Spec.Containers[0].Image)
	}
	oldT, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&oldRS.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	newT, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&newRS.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	d := diffObjects(oldT, newT, "")
	want := regexp.MustCompile(`^\.metadata\.labels\.pod-template-hash: "\w+" -> "\w+"\n` +
		`\.spec\.containers\.0\.image: "plantstore:v0\.1\.0" -> "plantstore:v0\.1\.1"$`)
	if !want.MatchString(d) {
		t.Errorf("the ReplicaSets' templates differ in\n%s\nwant the image and pod-template-hash alone", d)
	}
}

// content is an object without its metadata and status: what a user
// writes of it, beyond its name and labels.
func content(u *unstructured.Unstructured) map[string]any {
	out := map[string]any{}
	for k, v := range u.Object {
		if k != "metadata" && k != "status" {
			out[k] = v
		}
	}
	return out
}
