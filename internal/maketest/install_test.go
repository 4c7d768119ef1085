package maketest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/testmode"
)

// TestInstallPutsPlantstoreOnGOBIN: make install copies the binary it
// builds, with its version stamp, to GOBIN, as go install would.
func TestInstallPutsPlantstoreOnGOBIN(t *testing.T) {
	t.Parallel()
	testmode.SkipIfShort(t, "builds the binary through make install")
	dir := t.TempDir()
	gobin := filepath.Join(dir, "gobin")
	out, err := runMake(t, []string{"GOBIN=" + gobin}, "install", "BIN="+filepath.Join(dir, "bin", "plantstore"), "VERSION=v9.9.9-test")
	if err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	installed := filepath.Join(gobin, "plantstore")
	if !strings.HasSuffix(out, "plantstore: installed "+installed+"\n") {
		t.Errorf("make install does not say where it installed:\n%s", out)
	}
	version, err := exec.Command(installed, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", installed, err)
	}
	var info struct{ Version string }
	if err := json.Unmarshal(version, &info); err != nil || info.Version != "v9.9.9-test" {
		t.Fatalf("%s --version = %q (%v), want version v9.9.9-test", installed, version, err)
	}
}
