package kubetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// nodeName is the Node that StandInKubelet binds pods to. No kubelet runs
// behind it: the tests report for it.
const nodeName = "kubetest-node"

// podIPs numbers the stand-in pods' addresses, 10.244.x.y.
var podIPs atomic.Uint32

// StandInKubelet does, for one pod, what the scheduler and a kubelet would:
// it binds the pod to nodeName (creating that Node, Ready, on first use)
// and reports it Running with an IP, ready or not. Nothing runs: the
// controllers that follow pod status (ReplicaSets, Deployments,
// EndpointSlices) see what they would see of real pods.
func StandInKubelet(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, ready bool) (*corev1.Pod, error) {
	if err := ensureNode(ctx, cs); err != nil {
		return nil, err
	}
	if pod.Spec.NodeName == "" {
		binding := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			Target:     corev1.ObjectReference{Kind: "Node", Name: nodeName},
		}
		if err := cs.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("bind pod %s: %w", pod.Name, err)
		}
	}
	p, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	if p.Status.Phase == corev1.PodRunning && podReady(p) == ready {
		return p, nil // reported already
	}
	if p.Status.PodIP == "" {
		n := podIPs.Add(1)
		p.Status.PodIP = fmt.Sprintf("10.244.%d.%d", n/250, n%250+1)
		p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}}
		p.Status.HostIP = "127.0.0.1"
		p.Status.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
		p.Status.StartTime = &metav1.Time{Time: metav1.Now().Time}
	}
	p.Status.Phase = corev1.PodRunning
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	now := metav1.Now()
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: status, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: status, LastTransitionTime: now},
	}
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name:    c.Name,
			Image:   c.Image,
			ImageID: "kubetest://" + c.Image,
			Ready:   ready,
			Started: &ready,
			State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func ensureNode(ctx context.Context, cs kubernetes.Interface) error {
	if _, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{}); err == nil {
		return nil
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{
		corev1.LabelHostname:     nodeName,
		corev1.LabelTopologyZone: "kubetest-zone",
	}}}
	_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// The node lifecycle controller writes a new Node at once (its taints):
	// a status update from the created object may conflict with it, and a
	// Node left without its Ready status would never be reported again.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := cs.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		node.Status.Allocatable = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110"),
		}
		node.Status.Capacity = node.Status.Allocatable
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// RunPods reports every pod of the namespace Running and ready, as it
// appears, and confirms deleted pods gone, until the test ends: for tests that wait on a rollout (kubectl
// rollout status) as users do on a cluster.
func (cp *ControlPlane) RunPods(t testing.TB, namespace string) {
	t.Helper()
	cs := cp.Clientset(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	w, err := cs.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			var err error
			switch {
			case !ok:
				continue
			case pod.DeletionTimestamp != nil && pod.Spec.NodeName != "":
				// A kubelet confirms a bound pod's deletion once its
				// containers stopped; until then it stays Terminating.
				err = cs.CoreV1().Pods(namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
			case pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodRunning:
				_, err = StandInKubelet(ctx, cs, pod, true)
			}
			if err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				t.Errorf("kubetest: stand-in kubelet: %v", err)
			}
		}
	}()
}
