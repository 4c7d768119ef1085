package maketest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestHelpListsEveryTarget: make help has a line for each target the
// Makefile declares phony, which is every target it has.
func TestHelpListsEveryTarget(t *testing.T) {
	t.Parallel()
	makefile, err := os.ReadFile(filepath.Join(root(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	phony := regexp.MustCompile(`(?m)^\.PHONY:(.*)$`).FindSubmatch(makefile)
	if phony == nil {
		t.Fatal("the Makefile has no .PHONY line")
	}
	targets := strings.Fields(string(phony[1]))
	out := mustMake(t, "help")
	for _, target := range append(targets, "run", "test", "clean") {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(target) + ` +\S`).MatchString(out) {
			t.Errorf("make help has no line for %q:\n%s", target, out)
		}
	}
}

// TestCleanRemovesWhatRunMade: make clean removes the binary and the
// development data, and nothing else that is in the data directory.
func TestCleanRemovesWhatRunMade(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "plantstore")
	data := filepath.Join(dir, "data")
	other := filepath.Join(dir, "kept", "notes.txt")
	for _, f := range []string{bin, filepath.Join(data, "plants.db"), other} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustMake(t, "clean", "BIN="+bin, "DATA_DIR="+data)
	for _, gone := range []string{bin, filepath.Dir(bin), data} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("after make clean, %s: %v; want it removed", gone, err)
		}
	}

	// A data directory that holds something else keeps it.
	if err := os.WriteFile(filepath.Join(dir, "kept", "plants.db"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustMake(t, "clean", "BIN="+bin, "DATA_DIR="+filepath.Dir(other))
	if _, err := os.Stat(other); err != nil {
		t.Errorf("make clean removed %s, which make run did not make: %v", other, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kept", "plants.db")); !os.IsNotExist(err) {
		t.Errorf("make clean left plants.db: %v", err)
	}
}
