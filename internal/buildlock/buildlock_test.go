package buildlock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLock: while one holder has the lock, another open of the file cannot
// take it; once unlocked, it can. (On a file of its own: the machine's may
// be held by a build of the Dockerfile.)
func TestLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := File(path)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("flock while Lock holds it: %v, want %v", err, syscall.EWOULDBLOCK)
	}
	unlock()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("flock after unlock: %v", err)
	}
}

// TestArgs: the build arguments name the checkout's commit, the same in
// every package that asks (so that their builds share the cache).
func TestArgs(t *testing.T) {
	version, revision, err := Args()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimSpace(string(out)); revision != want || version != "e2e-"+want[:12] {
		t.Fatalf("Args() = %q, %q, want e2e-%s, %s", version, revision, want[:12], want)
	}
}
