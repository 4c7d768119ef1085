package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
)

// TestBoltReadOnlyFileIsNamed: a plants.db the process may not write, in a
// data dir it may write, is reported as that file and its mode, not as an
// unwritable data dir. As in TestBoltUnwritableDataDirStopsStart, a test
// run as root (whom file modes do not stop) runs the program as nobody,
// owning the data dir and the read-only file.
func TestBoltReadOnlyFileIsNamed(t *testing.T) {
	base, err := os.MkdirTemp("", "plantstore-readonly-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	dir := filepath.Join(base, "data")
	store, err := boltstore.Open(dir) // a valid plant store, then made read-only
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, boltstore.FileName)
	for p, mode := range map[string]os.FileMode{base: 0o755, dir: 0o700, path: 0o444} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	var cred *syscall.Credential
	bin := buildBinary(t)
	if os.Geteuid() == 0 {
		const nobody = 65534
		cred = &syscall.Credential{Uid: nobody, Gid: nobody}
		for _, p := range []string{dir, path} {
			if err := os.Chown(p, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}
		copied := filepath.Join(base, "plantstore")
		if err := copyFile(bin, copied, 0o755); err != nil {
			t.Fatal(err)
		}
		bin = copied
	}
	code, stderr := runToExit(t, bin, cred, "PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR="+dir)
	assertStartFailure(t, code, stderr,
		"plantstore: bolt store: "+path+" is not writable by this process (mode -r--r--r--): open: permission denied\n")
}
