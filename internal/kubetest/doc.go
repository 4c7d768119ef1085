// Package kubetest runs a throwaway Kubernetes control plane for tests: etcd,
// kube-apiserver and kube-controller-manager, built from the Go module proxy
// at pinned versions (the modules under build/, the way envtest-style setups
// do it), listening only on loopback, with a self-signed serving
// certificate, a static admin token and service-account keys made for the
// run, and stopped with the tests. No mocks: the API server validates,
// defaults and admits objects (Pod Security admission, strict fields,
// server-side apply) exactly as a cluster's does.
//
// No kubelet and no scheduler run: the controller-manager creates
// ReplicaSets and Pods, which stay unscheduled unless a test binds them to a
// Node object and reports their status itself, as a kubelet would. (Why no
// real kubelet runs here: docs/kubernetes.md, "How the manifests are
// tested".)
//
// The first build compiles Kubernetes (several minutes on two cores); the
// binaries are cached under the user's cache directory, keyed by the build
// modules' contents and the Go version, and go build's own cache makes a
// rebuild cheap too. When the binaries cannot be built (no go command, no
// module proxy), tests skip with a loud reason on a laptop and fail when
// CI=true.
package kubetest
