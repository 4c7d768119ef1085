package main

// Crash test on bolt: a real plantstore under concurrent create load is
// killed with SIGKILL at a random moment, five times over the same data
// dir. Every create it answered 200 must be in the file afterwards, with
// the same name and tag; nothing it stored may differ from what was sent;
// and the file must pass bbolt's consistency check and the store's own
// (every tagged plant in the tag index, nothing else there).

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

const (
	boltCrashCycles      = 5
	boltCrashWorkers     = 8
	boltCrashMaxPerCycle = 4000 // per worker: bounds a cycle if the kill comes late
	boltCrashMinAcked    = 200  // creates answered before the kill may come
)

func TestBoltCrashKeepsEveryAcknowledgedCreate(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	dir := t.TempDir()
	sent := map[int64]plant.Plant{}  // every create sent, answered or not
	acked := map[int64]plant.Plant{} // every create answered 200

	for cycle := range boltCrashCycles {
		p := startProcess(t, "PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR="+dir)
		recheckAcked(t, p.API, acked, rng)

		load := startAPILoad(p.API, int64(cycle), boltCrashWorkers, boltCrashMaxPerCycle)
		load.waitFor(t, strconv.Itoa(boltCrashMinAcked)+" answers 200", func(s map[int]int) bool {
			return s[http.StatusOK] >= boltCrashMinAcked
		})
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond) // a random moment under load
		if err := p.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		p.Wait(t, 30*time.Second)
		res := load.wait()
		if len(res.statuses) != 1 {
			t.Fatalf("cycle %d: answers by status %v, want only 200s before the kill", cycle, res.statuses)
		}
		for id, pl := range res.sent {
			sent[id] = pl
		}
		for id, pl := range res.acked {
			acked[id] = pl
		}
		t.Logf("cycle %d: %d creates answered 200 before SIGKILL, %d sent", cycle, len(res.acked), len(res.sent))
		verifyBoltFile(t, dir, sent, acked)
	}
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
