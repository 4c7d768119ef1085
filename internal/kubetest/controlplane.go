package kubetest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/plantstore/plantstore/internal/poll"
)

// startTimeout bounds the wait for each program to answer; the programs
// start in seconds, the rest is room for a loaded CI machine.
const startTimeout = 2 * time.Minute

// ControlPlane is a running etcd, kube-apiserver and kube-controller-manager.
type ControlPlane struct {
	// URL is the API server's, https://127.0.0.1:port.
	URL string
	// Token is a bearer token of a user in system:masters.
	Token string
	// CACert is the PEM certificate that signed the API server's.
	CACert []byte
	// Kubeconfig is a kubeconfig file for the admin user, for kubectl.
	Kubeconfig string
	// BinDir holds kubectl (and the control plane's programs).
	BinDir string

	dir   string
	procs []*process // in start order; stopped in reverse
}

// unavailable ends a test that cannot get a control plane: a skip with a
// loud reason when the programs cannot be built on a laptop, a failure
// otherwise and always under CI=true.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, errCannotBuild) && os.Getenv("CI") != "true" {
		t.Skipf("SKIPPED, NOT TESTED: %v", err)
	}
	t.Fatalf("kubetest: %v", err)
}

// startControlPlane builds (or finds in the cache) and starts the programs.
// The caller stops them with Stop.
func startControlPlane() (cp *ControlPlane, err error) {
	etcdBin, err := etcdModule.binaries()
	if err != nil {
		return nil, err
	}
	kubeBin, err := kubernetesModule.binaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		return nil, err
	}
	cp = &ControlPlane{dir: dir, BinDir: kubeBin}
	defer func() {
		if err != nil {
			_ = cp.Stop()
		}
	}()
	cred, err := makeCredentials(dir)
	if err != nil {
		return nil, err
	}
	cp.Token, cp.CACert = cred.adminToken, cred.caCert

	etcdURL, err := cp.startEtcd(etcdBin)
	if err != nil {
		return nil, err
	}
	if err := cp.startAPIServer(kubeBin, etcdURL, cred); err != nil {
		return nil, err
	}
	if cp.Kubeconfig, err = cp.writeKubeconfig(); err != nil {
		return nil, err
	}
	if err := cp.startControllerManager(kubeBin, cred); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "kubetest: control plane up at %s (logs in %s)\n", cp.URL, dir)
	return cp, nil
}

func (cp *ControlPlane) startEtcd(bin string) (string, error) {
	client, err := freePort()
	if err != nil {
		return "", err
	}
	peer, err := freePort()
	if err != nil {
		return "", err
	}
	clientURL, peerURL := "http://127.0.0.1:"+client, "http://127.0.0.1:"+peer
	p, err := startProcess(cp.dir, bin, "etcd",
		"--name=kubetest",
		"--data-dir="+filepath.Join(cp.dir, "etcd"),
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL,
		"--unsafe-no-fsync", // a throwaway store: no need to wait for the disk
		"--log-level=warn",
	)
	if err != nil {
		return "", err
	}
	cp.procs = append(cp.procs, p)
	return clientURL, waitFor(p, func() error {
		resp, err := http.Get(clientURL + "/health") //nolint:gosec,noctx // G107: our loopback etcd
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
}

func (cp *ControlPlane) startAPIServer(bin, etcdURL string, cred *credentials) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	cp.URL = "https://127.0.0.1:" + port
	p, err := startProcess(cp.dir, bin, "kube-apiserver",
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+port,
		// The endpoint reconciler refuses a loopback address for the
		// "kubernetes" Service's endpoints; nothing here needs them.
		"--endpoint-reconciler-type=none",
		"--tls-cert-file="+cred.servingCert, "--tls-private-key-file="+cred.servingKey,
		"--cert-dir="+filepath.Join(cp.dir, "apiserver-certs"),
		"--client-ca-file="+cred.caFile,
		"--token-auth-file="+cred.tokenFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+cred.saKey,
		"--service-account-signing-key-file="+cred.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=false",
		"--profiling=false",
	)
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, p)
	client := cp.httpClient()
	return waitFor(p, func() error { return cp.get(client, "/readyz") })
}

func (cp *ControlPlane) startControllerManager(bin string, cred *credentials) error {
	p, err := startProcess(cp.dir, bin, "kube-controller-manager",
		"--kubeconfig="+cp.Kubeconfig,
		"--leader-elect=false",
		"--secure-port=0", // nothing asks its health or metrics
		"--service-account-private-key-file="+cred.saKey,
		"--root-ca-file="+cred.caFile,
		"--use-service-account-credentials=false",
		// No kubelet reports on the Nodes tests make: the node lifecycle
		// controller would mark them unreachable, their pods not ready,
		// and evict them.
		"--controllers=*,-node-lifecycle-controller",
	)
	if err != nil {
		return err
	}
	cp.procs = append(cp.procs, p)
	// The service account controller gives every namespace its "default"
	// ServiceAccount: once "default" has one, the controllers run.
	client := cp.httpClient()
	return waitFor(p, func() error { return cp.get(client, "/api/v1/namespaces/default/serviceaccounts/default") })
}

// waitFor polls ready every 100 ms until it succeeds, the process exits,
// or startTimeout.
func waitFor(p *process, ready func() error) error {
	var exit error
	err := poll.Until(context.Background(), 100*time.Millisecond, startTimeout, func() (bool, error) {
		err := ready()
		if err == nil {
			return true, nil
		}
		if exit = p.exited(); exit != nil {
			return false, poll.Stop(exit)
		}
		return false, err
	})
	if err == nil || exit != nil {
		return err // an exit's error has the log's tail
	}
	return fmt.Errorf("%s not ready: %w\n%s", p.name, err, p.tail())
}

func (cp *ControlPlane) httpClient() *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cp.CACert)
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}
}

func (cp *ControlPlane) get(client *http.Client, path string) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, cp.URL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+cp.Token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}

// RESTConfig is a client-go configuration for the admin user.
func (cp *ControlPlane) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            cp.URL,
		BearerToken:     cp.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.CACert},
		QPS:             -1, // no client-side rate limit: the tests' own server
	}
}

// writeKubeconfig writes the admin's kubeconfig, for kubectl and the
// controller-manager.
func (cp *ControlPlane) writeKubeconfig() (string, error) {
	path := filepath.Join(cp.dir, "kubeconfig")
	caFile := filepath.Join(cp.dir, "ca.crt")
	config := strings.Join([]string{
		"apiVersion: v1",
		"kind: Config",
		"clusters:",
		"- name: kubetest",
		"  cluster: {server: " + cp.URL + ", certificate-authority: " + caFile + "}",
		"users:",
		"- name: admin",
		"  user: {token: " + cp.Token + "}",
		"contexts:",
		"- name: kubetest",
		"  context: {cluster: kubetest, user: admin}",
		"current-context: kubetest",
		"",
	}, "\n")
	return path, os.WriteFile(path, []byte(config), 0o600)
}

// Stop stops the programs, last started first, and removes their
// directory.
func (cp *ControlPlane) Stop() error {
	var errs []error
	for i := len(cp.procs) - 1; i >= 0; i-- {
		if err := cp.procs[i].stop(); err != nil {
			errs = append(errs, err)
		}
	}
	cp.procs = nil
	if len(errs) == 0 {
		errs = append(errs, os.RemoveAll(cp.dir))
	} // else keep the logs for a look
	return errors.Join(errs...)
}
