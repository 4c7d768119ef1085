package k8stest

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/json"
)

// Object is one decoded manifest: Value is a pointer to its Go type, such
// as *appsv1.Deployment.
type Object struct {
	Kind  string // apiVersion and kind, e.g. "apps/v1 Deployment"
	Meta  metav1.Object
	Value any
}

// kinds are the types the manifests may use. A new kind needs its type
// here: an object the tests cannot decode strictly is an error.
var kinds = map[string]func() any{
	"v1 ConfigMap":                            func() any { return new(corev1.ConfigMap) },
	"v1 PersistentVolumeClaim":                func() any { return new(corev1.PersistentVolumeClaim) },
	"v1 Service":                              func() any { return new(corev1.Service) },
	"v1 ServiceAccount":                       func() any { return new(corev1.ServiceAccount) },
	"apps/v1 Deployment":                      func() any { return new(appsv1.Deployment) },
	"autoscaling/v2 HorizontalPodAutoscaler":  func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	"networking.k8s.io/v1 NetworkPolicy":      func() any { return new(networkingv1.NetworkPolicy) },
	"policy/v1 PodDisruptionBudget":           func() any { return new(policyv1.PodDisruptionBudget) },
	"monitoring.coreos.com/v1 ServiceMonitor": func() any { return new(ServiceMonitor) },
	"monitoring.coreos.com/v1 PrometheusRule": func() any { return new(PrometheusRule) },
	"postgresql.cnpg.io/v1 Cluster":           func() any { return new(PostgresCluster) },
}

// Decode decodes one object strictly, the way the API server's strict field
// validation does (sigs.k8s.io/json, which it uses): a field its type does
// not have, a duplicate field or a field in the wrong case is an error, not
// something dropped without a word.
func Decode(data []byte) (Object, error) {
	var tm metav1.TypeMeta
	if err := json.UnmarshalCaseSensitivePreserveInts(data, &tm); err != nil {
		return Object{}, err
	}
	kind := tm.APIVersion + " " + tm.Kind
	newValue, ok := kinds[kind]
	if !ok {
		return Object{}, fmt.Errorf("kind %q: no Go type to check it against (add it to k8stest's kinds)", kind)
	}
	v := newValue()
	strictErrs, err := json.UnmarshalStrict(data, v)
	if err != nil {
		return Object{}, fmt.Errorf("%s: %w", kind, err)
	}
	if len(strictErrs) > 0 {
		return Object{}, fmt.Errorf("%s: %w", kind, errors.Join(strictErrs...))
	}
	meta, ok := v.(metav1.Object)
	if !ok {
		return Object{}, fmt.Errorf("%s: %T has no object metadata", kind, v)
	}
	return Object{Kind: kind, Meta: meta, Value: v}, nil
}
