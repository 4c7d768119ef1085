package kubetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The Prometheus Operator release whose CustomResourceDefinitions the
// monitoring component is applied against: its published definitions
// (example/prometheus-operator-crd in the operator's repository), taken
// from the operator's module on the Go module proxy, the one place here
// that serves them. v0.85.0 is the newest version the proxy serves;
// prometheusOperatorSum pins its content.
const (
	prometheusOperatorModule  = "github.com/prometheus-operator/prometheus-operator"
	prometheusOperatorVersion = "v0.85.0"
	prometheusOperatorSum     = "h1:M5xLCLEoaW2IJfnuCwFzzpL+jSVQu3KGT84Pye+fW8s="
)

// PrometheusOperatorCRD returns the YAML of one of the operator's
// definitions, by file name without the group, e.g. "servicemonitors".
// Without the module proxy the test skips on a laptop and fails under CI.
func PrometheusOperatorCRD(t testing.TB, name string) []byte {
	t.Helper()
	dir, err := downloadModule(prometheusOperatorModule, prometheusOperatorVersion, prometheusOperatorSum)
	if err != nil {
		unavailable(t, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_"+name+".yaml")) //nolint:gosec // G304: a pinned module's file
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The CloudNativePG release whose CustomResourceDefinitions (the module's
// config/crd/bases, what the operator's release manifest installs) the
// cloudnative-pg overlay is applied against, and whose source tells the
// names of what the operator creates for a Cluster. The module proxy lists
// no versions of this module but serves exact ones; cloudNativePGSum pins
// the content.
const (
	CloudNativePGModule  = "github.com/cloudnative-pg/cloudnative-pg"
	CloudNativePGVersion = "v1.28.1"
	cloudNativePGSum     = "h1:HdOUWgFhta558uHfXeO/199qCApxaj5yi05x6nWNmgs="
)

// CloudNativePGCRD returns the YAML of one of the operator's definitions,
// by plural name without the group, e.g. "clusters".
func CloudNativePGCRD(t testing.TB, name string) []byte {
	t.Helper()
	return CloudNativePGFile(t, filepath.Join("config", "crd", "bases", "postgresql.cnpg.io_"+name+".yaml"))
}

// CloudNativePGFile returns a file of the pinned CloudNativePG module, by
// its path in the module. Without the module proxy the test skips on a
// laptop and fails under CI.
func CloudNativePGFile(t testing.TB, path string) []byte {
	t.Helper()
	dir, err := downloadModule(CloudNativePGModule, CloudNativePGVersion, cloudNativePGSum)
	if err != nil {
		unavailable(t, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(path))) //nolint:gosec // G304: a pinned module's file
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// downloadModule fetches a module version into the module cache with the
// go command (verified against the checksum database) and checks its hash
// against the pinned one.
func downloadModule(path, version, sum string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("%w: %v", errCannotBuild, err)
	}
	cmd := exec.CommandContext(context.Background(), goBin, "mod", "download", "-json", path+"@"+version) //nolint:gosec // G204: pinned constants
	cmd.Dir = os.TempDir()                                                                                // outside any module
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.Output()
	var info struct{ Dir, Sum, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || err != nil || info.Error != "" {
		return "", fmt.Errorf("%w: go mod download %s@%s: %v %s", errCannotBuild, path, version, err, info.Error)
	}
	if info.Sum != sum {
		return "", fmt.Errorf("%s@%s: hash %s, pinned %s", path, version, info.Sum, sum)
	}
	return info.Dir, nil
}
