package chaos_test

import (
	"context"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/chaos"
	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/testmode"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// The fault-injection runs. make test runs the short ones (every fault once,
// about 80 s of faults for postgres and for postgres-ha, side by side, 15 s
// for bolt); make chaos runs them one after the other for CHAOS_DURATION. CHAOS_SEED replays a run's random choices (which replica,
// how long, which ids and operations); CHAOS_ARTIFACTS keeps the logs,
// HAProxy's files, the summary and, on failure, Porcupine's visualisation
// in that directory (otherwise a temporary one, kept only on failure).

func TestChaosPostgres(t *testing.T) {
	parallelWhenShort(t)
	run(t, chaos.Config{Store: "postgres", Replicas: 3, Clients: 24, IDs: 200, IDLife: 10 * time.Second})
}

// TestChaosPostgresHA runs on a primary and a synchronous standby under
// Patroni (with etcd): the database itself fails over, switches over,
// stalls and is partitioned (docs/reliability.md).
func TestChaosPostgresHA(t *testing.T) {
	for _, prog := range []string{"patroni", "etcd"} {
		if _, err := exec.LookPath(prog); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed; .ci/run installs Debian's patroni and etcd-server", prog)
			}
			t.Skipf("SKIPPED, NOT TESTED: %s is not installed (apt-get install patroni etcd-server): %v", prog, err)
		}
	}
	parallelWhenShort(t)
	run(t, chaos.Config{Store: "postgres-ha", Replicas: 3, Clients: 24, IDs: 200, IDLife: 10 * time.Second})
}

func TestChaosBolt(t *testing.T) {
	run(t, chaos.Config{Store: "bolt", Replicas: 1, Clients: 16, IDs: 200, IDLife: 10 * time.Second})
}

func run(t *testing.T, cfg chaos.Config) {
	testmode.SkipIfShort(t, "starts a chaos cluster of built binaries")
	cfg.Seed = seed(t)
	cfg.Calm = 2 * time.Second
	if d := os.Getenv("CHAOS_DURATION"); d != "" {
		var err error
		if cfg.Duration, err = time.ParseDuration(d); err != nil {
			t.Fatalf("CHAOS_DURATION=%q: %v", d, err)
		}
		cfg.Calm = 5 * time.Second
	}
	cfg.Dir = artifacts(t, cfg.Store)
	cfg.Logf = t.Logf
	t.Logf("chaos: store=%s seed=%d (replay: CHAOS_SEED=%d) artifacts=%s", cfg.Store, cfg.Seed, cfg.Seed, cfg.Dir)
	if _, err := exec.LookPath("haproxy"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("haproxy is not installed; .ci/run installs Debian's haproxy")
		}
		t.Skipf("SKIPPED, NOT TESTED: haproxy is not installed (apt-get install haproxy): %v", err)
	}
	// Webhook delivery is checked in every run: two receivers on loopback,
	// answering 200, up from before the first replica starts to the end:
	// the origin endpoint's (every create) and the envelope endpoint's
	// (every change).
	secret := webhookstest.NewSecret()
	cfg.Webhooks = &chaos.Webhooks{Receiver: webhookstest.NewReceiver(t, secret), Envelopes: webhookstest.NewReceiver(t, secret), Secret: secret}
	res, err := chaos.Run(context.Background(), cfg, func() *pgtest.Cluster { return pgtest.NewTCPCluster(t) })
	if err != nil {
		t.Fatalf("chaos run (artifacts in %s): %v", cfg.Dir, err)
	}
	t.Log("\n" + res.Summary)
	if res.Failed() {
		t.Fatalf("chaos run failed; replay with CHAOS_SEED=%d; artifacts in %s\n%s", cfg.Seed, cfg.Dir, strings.Join(res.Violations, "\n"))
	}
}

// parallelWhenShort runs the two postgres variants' short runs side by
// side, so that the highly available one adds little to make test's time;
// long runs stay one at a time, each with the machine to itself.
func parallelWhenShort(t *testing.T) {
	if os.Getenv("CHAOS_DURATION") == "" {
		t.Parallel()
	}
}

// seed is CHAOS_SEED or a fresh random one.
func seed(t *testing.T) uint64 {
	if s := os.Getenv("CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED=%q: %v", s, err)
		}
		return n
	}
	return rand.Uint64()
}

// artifacts is CHAOS_ARTIFACTS/<store>, or a temporary directory that is
// removed when the test passes and kept when it fails.
func artifacts(t *testing.T, store string) string {
	if dir := os.Getenv("CHAOS_ARTIFACTS"); dir != "" {
		d := dir + "/" + store
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d, err := os.MkdirTemp("", "chaos-"+store+"-")
	if err != nil {
		t.Fatal(err)
	}
	// The highly available database's etcd and Patroni run as the
	// PostgreSQL server's user, in directories of their own under d: they
	// must be able to reach them (MkdirTemp makes d 0700).
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.RemoveAll(d)
		}
	})
	return d
}
