package filewatch

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A file replaced by a rename, as editors and Kubernetes Secret volumes do
// it, is noticed; after Stop nothing is called.
func TestRenameIntoPlaceIsNoticed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "file")
	if err := os.WriteFile(path, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 100)
	w := New(path, func() { changed <- struct{}{} }, func(err error) { t.Errorf("watch error: %v", err) })
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file.new"), []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "file.new"), path); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(20 * time.Second):
		t.Fatal("the rename was not noticed")
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for len(changed) > 0 {
		<-changed
	}
	if err := os.WriteFile(path, []byte("three"), 0o600); err != nil {
		t.Fatal(err)
	}
	if len(changed) != 0 {
		t.Fatal("called after Stop")
	}
}
