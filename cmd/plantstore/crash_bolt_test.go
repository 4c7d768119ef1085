package main

// Crash test on bolt: a real plantstore under concurrent create load is
// killed with SIGKILL at a random moment, five times over the same data
// dir. Every create it answered 200 must be in the file afterwards, with
// the same name and tag; nothing it stored may differ from what was sent;
// and the file must pass bbolt's consistency check and the store's own
// (every tagged plant in the tag index, nothing else there).

import (
	"testing"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

func TestBoltCrashKeepsEveryAcknowledgedCreate(t *testing.T) {
	dir := t.TempDir()
	runCrashCycles(t, []string{"PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR=" + dir}, func(sent, acked map[int64]plant.Plant) {
		verifyBoltFile(t, dir, sent, acked)
	})
}

// verifyBoltFile opens the dead process's file directly: it must pass the
// consistency checks and hold exactly what verifyStored expects.
func verifyBoltFile(t *testing.T, dir string, sent, acked map[int64]plant.Plant) {
	t.Helper()
	s, err := boltstore.Open(dir)
	if err != nil {
		t.Fatalf("open after SIGKILL: %v", err)
	}
	defer s.Close()
	if err := s.Check(); err != nil {
		t.Fatalf("file check after SIGKILL: %v", err)
	}
	verifyStored(t, s, sent, acked)
}
