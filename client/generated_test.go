package client

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestGeneratedIsFresh regenerates internal/gen from api/openapi.yaml with
// the pinned oapi-codegen and fails when the committed file differs: run
// `go generate ./client` after changing the document.
func TestGeneratedIsFresh(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "generated.go")
	// The committed configuration, writing elsewhere: its output line is
	// the one that names the committed file.
	config, err := os.ReadFile("oapi-codegen.yaml")
	if err != nil {
		t.Fatal(err)
	}
	config = bytes.Replace(config, []byte("output: internal/gen/generated.go"), []byte("output: "+out), 1)
	configPath := filepath.Join(dir, "oapi-codegen.yaml")
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "tool", "oapi-codegen", "-config", configPath, "../api/openapi.yaml")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, msg)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("internal/gen/generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatal("client/internal/gen/generated.go is stale: run `go generate ./client` and commit it")
	}
}
