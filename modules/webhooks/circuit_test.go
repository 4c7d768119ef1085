package webhooks

import (
	"testing"
	"time"
)

func TestCircuitOpensAfterFailuresInARowAndProbes(t *testing.T) {
	base := 5 * time.Second
	c := newCircuit(base)
	now := time.Unix(1_700_000_000, 0)
	allowed := func(want int) (int, bool) { return c.allowed(want, now) }

	// Failures broken by a success never open it.
	for range circuitFailures - 1 {
		c.failed(false, now)
	}
	c.succeeded()
	for range circuitFailures - 1 {
		if wait := c.failed(false, now); wait != 0 {
			t.Fatalf("opened after fewer than %d failures in a row", circuitFailures)
		}
	}
	if n, probe := allowed(4); n != 4 || probe {
		t.Fatalf("closed circuit allowed %d (probe %v), want 4", n, probe)
	}

	// The next failure opens it for the base wait; nothing starts meanwhile,
	// and an attempt that was already in flight changes nothing.
	if wait := c.failed(false, now); wait != base {
		t.Fatalf("opened for %v, want %v", wait, base)
	}
	if n, _ := allowed(4); n != 0 {
		t.Fatalf("open circuit allowed %d attempts", n)
	}
	if wait := c.failed(false, now); wait != 0 {
		t.Fatalf("an earlier attempt's failure reopened it for %v", wait)
	}

	// Then one probe at a time; each failed probe doubles the wait, up to
	// circuitMaxOpen times the base.
	var waits []time.Duration
	for range 6 {
		now = c.until
		if n, probe := allowed(4); n != 1 || !probe {
			t.Fatalf("after the wait: allowed %d (probe %v), want the probe", n, probe)
		}
		if n, _ := allowed(4); n != 0 {
			t.Fatalf("a second probe was allowed while one is in flight")
		}
		waits = append(waits, c.failed(true, now))
	}
	want := []time.Duration{2 * base, 4 * base, 8 * base, 12 * base, 12 * base, 12 * base}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("waits after failed probes %v, want %v", waits, want)
		}
	}

	// A probe that found nothing due is given back; one that succeeds
	// closes the circuit and the next opening starts from the base again.
	now = c.until
	if n, _ := allowed(4); n != 1 {
		t.Fatal("no probe after the wait")
	}
	c.unused()
	if n, probe := allowed(4); n != 1 || !probe {
		t.Fatal("a probe that was given back was not allowed again")
	}
	if !c.succeeded() {
		t.Fatal("a successful probe did not close the circuit")
	}
	if n, probe := allowed(4); n != 4 || probe {
		t.Fatalf("after a success: allowed %d (probe %v), want 4", n, probe)
	}
	for range circuitFailures - 1 {
		c.failed(false, now)
	}
	if wait := c.failed(false, now); wait != base {
		t.Fatalf("reopened for %v, want the base %v", wait, base)
	}
}
