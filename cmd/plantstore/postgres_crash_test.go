package main

// Crash tests on postgres. First the service: a real plantstore under
// concurrent create load is killed with SIGKILL at a random moment, five
// times over one database; every create it answered 200 must be in the
// database with the same name and tag, and nothing it stored may differ
// from what was sent. Then the database: PostgreSQL is stopped under load;
// the API answers 503 with Retry-After and /readyz 503; once PostgreSQL is
// back, 200s return without restarting plantstore.

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

func TestPostgresServiceCrashKeepsEveryAcknowledgedCreate(t *testing.T) {
	url := pgtest.NewDatabase(t)
	runCrashCycles(t, []string{"PLANTSTORE_STORE=postgres", "PLANTSTORE_POSTGRES_URL=" + url}, func(sent, acked map[int64]plant.Plant) {
		verifyPostgres(t, url, sent, acked)
	})
}

// recheckAcked re-sends a sample of the acknowledged creates to a restarted
// process: identical ones answer 200, changed ones 409.
func recheckAcked(t *testing.T, api string, acked map[int64]plant.Plant, rng *rand.Rand) {
	t.Helper()
	n := 0
	for _, p := range acked { // map order is random already
		if n++; n > 20 {
			return
		}
		if status, err := postPlant(http.DefaultClient, api, p); err != nil || status != http.StatusOK {
			t.Fatalf("after restart, identical create of %d = %d, %v; want 200", p.ID, status, err)
		}
		changed := p
		changed.Name += "-changed" + strconv.Itoa(rng.IntN(10))
		if status, err := postPlant(http.DefaultClient, api, changed); err != nil || status != http.StatusConflict {
			t.Fatalf("after restart, changed create of %d = %d, %v; want 409", p.ID, status, err)
		}
	}
}

// verifyPostgres reads the database directly: it must hold every
// acknowledged plant as sent, and nothing that was not sent.
func verifyPostgres(t *testing.T, url string, sent, acked map[int64]plant.Plant) {
	t.Helper()
	s := openPostgres(t, url)
	defer s.Close()
	verifyStored(t, s, sent, acked)
}

// TestPostgresOutage stops the database under load and starts it again,
// with the same plantstore serving throughout.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()              // a cluster of its own
	c := pgtest.NewCluster(t) // its own: stopping the shared one would fail other tests
	cfg := testConfig(t)
	cfg.Plants.Store = plants.StorePostgres
	cfg.Plants.Postgres.URL = c.NewDatabase(t)
	s := startServer(t, cfg)

	const workers, maxPerWorker = 4, 50_000
	load := startAPILoad(s.API, 0, workers, maxPerWorker)
	load.waitFor(t, "50 answers 200", func(st map[int]int) bool { return st[http.StatusOK] >= 50 })

	// Down: the API answers 503 with Retry-After, readiness fails.
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	load.waitFor(t, "20 answers 503", func(st map[int]int) bool { return st[http.StatusServiceUnavailable] >= 20 })
	// An id the load does not use; the answer is checked against the
	// OpenAPI document.
	const id = 1 << 62
	r := s.post(t, `{"id":`+strconv.Itoa(id)+`,"name":"during the outage"}`)
	assertError(t, r, http.StatusServiceUnavailable)
	if ra := r.Header.Get("Retry-After"); ra == "" {
		t.Fatal("503 without Retry-After")
	}
	if r := getAdmin(t, s, "/readyz"); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with the database down = %d %s, want 503", r.Status, r.Body)
	}

	// Up again: 200s come back and readiness passes, with no restart.
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	okBefore := load.count(http.StatusOK)
	load.waitFor(t, "50 more answers 200", func(st map[int]int) bool { return st[http.StatusOK] >= okBefore+50 })
	// A pooled connection the restart killed may still fail one ping.
	eventually(t, 30*time.Second, "/readyz answers 200 after the database came back", func() bool {
		return getAdmin(t, s, "/readyz").Status == http.StatusOK
	})
	if r := s.post(t, `{"id":`+strconv.Itoa(id)+`,"name":"after the outage"}`); r.Status != http.StatusOK {
		t.Fatalf("POST after the outage = %d %s", r.Status, r.Body)
	}

	res := load.wait()
	t.Logf("answers by status: %v", res.statuses)
	if res.transportErr != nil {
		t.Fatalf("a request got no answer: %v", res.transportErr)
	}
	for status := range res.statuses {
		if status != http.StatusOK && status != http.StatusServiceUnavailable {
			t.Fatalf("answers by status %v: want only 200 and 503", res.statuses)
		}
	}
	if res.noRetryAfter > 0 {
		t.Fatalf("%d answers 503 had no Retry-After", res.noRetryAfter)
	}
	res.sent[id] = plant.Plant{ID: id, Name: "after the outage"}
	res.acked[id] = res.sent[id]
	verifyPostgres(t, cfg.Plants.Postgres.URL, res.sent, res.acked)
}
