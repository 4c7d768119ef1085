package main

// plantstore migrate, the subcommand a Kubernetes Job runs before a
// rollout (docs/kubernetes.md), and --start-timeout, which bounds the
// migrations a replica runs at start: the real binary, on a real
// PostgreSQL server (internal/pgtest).

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
)

// runMigrate runs `plantstore migrate args...` with env and no other
// PLANTSTORE_* variable, and returns its exit code, stdout and stderr.
func runMigrate(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, buildBinary(t), append([]string{"migrate"}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run() // the exit code is what the callers check
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// migrationsApplied is the database's schema_migrations, one line per
// migration with the time it was applied: a second run that changes it
// was not a no-op.
func migrationsApplied(t *testing.T, url string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var applied string
	err = conn.QueryRow(context.Background(),
		`SELECT coalesce(string_agg(version || ' ' || name || ' ' || applied_at, E'\n' ORDER BY version), '')
		 FROM schema_migrations`).Scan(&applied)
	if err != nil {
		t.Fatalf("read schema_migrations: %v", err)
	}
	var plantsTable *string
	if err := conn.QueryRow(context.Background(), `SELECT to_regclass('plants')::text`).Scan(&plantsTable); err != nil || plantsTable == nil {
		t.Fatalf("no plants table after migrating (%v)", err)
	}
	return applied
}

func TestMigrateSubcommandPostgres(t *testing.T) {
	url := pgtest.NewDatabase(t)
	// The Deployment's environment, tokens and all: the Job may share its
	// ConfigMap, and migrate ignores what it does not need.
	env := []string{"PLANTSTORE_STORE=postgres", "PLANTSTORE_POSTGRES_URL=" + url, "PLANTSTORE_TOKENS=" + testToken}
	code, stdout, stderr := runMigrate(t, env)
	if code != 0 || stderr != "" {
		t.Fatalf("migrate = exit %d, stderr %q; want 0 and nothing", code, stderr)
	}
	if want := "plantstore migrate: the postgres store's schema is up to date\n"; stdout != want {
		t.Fatalf("stdout %q, want %q", stdout, want)
	}
	applied := migrationsApplied(t, url)
	if applied == "" {
		t.Fatal("schema_migrations is empty after migrate")
	}

	// Again: nothing to do.
	code, stdout, stderr = runMigrate(t, env)
	if code != 0 || stderr != "" || !strings.HasSuffix(stdout, "up to date\n") {
		t.Fatalf("second migrate = exit %d, stdout %q, stderr %q; want 0", code, stdout, stderr)
	}
	if again := migrationsApplied(t, url); again != applied {
		t.Fatalf("the second run changed schema_migrations:\n%s\nto\n%s", applied, again)
	}

	// A replica that starts afterwards migrates too, and finds nothing to do.
	p := startProcess(t, "PLANTSTORE_STORE=postgres", "PLANTSTORE_POSTGRES_URL="+url)
	if status := getStatus(t, p.Admin+"/readyz"); status != http.StatusOK {
		t.Fatalf("readyz = %d after migrate\n%s", status, p.Output())
	}
	if again := migrationsApplied(t, url); again != applied {
		t.Fatalf("the server's start changed schema_migrations:\n%s\nto\n%s", applied, again)
	}
}

func TestMigrateSubcommandBolt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	code, stdout, stderr := runMigrate(t, []string{"PLANTSTORE_DATA_DIR=" + dir}, "--store=bolt")
	if code != 0 || stderr != "" || stdout != "plantstore migrate: the bolt store's schema is up to date\n" {
		t.Fatalf("migrate --store=bolt = exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	s, err := boltstore.Open(dir) // the file is there, and a plant store
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
}

// TestMigrateSubcommandRefuses: a mistake is exit 2 and one line on stderr,
// nothing on stdout, and no password in it.
func TestMigrateSubcommandRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"bad URL", []string{"--store=postgres", "--postgres-url=postgres://plantstore:s3cret@db:port/plants"},
			`plantstore migrate: postgres: cannot parse `},
		{"memory", []string{"--store=memory"}, "plantstore migrate: --store memory keeps no schema: nothing to migrate\n"},
		{"bad value", []string{"--store=postgres", "--postgres-max-conns=0"},
			"plantstore migrate: --postgres-max-conns 0: want a positive number (see plantstore migrate --help)\n"},
		{"bad start timeout", []string{"--store=postgres", "--start-timeout=0s"},
			"plantstore migrate: --start-timeout 0s: must be positive (see plantstore migrate --help)\n"},
		{"server flag", []string{"--tokens=t"}, "plantstore migrate: unknown flag --tokens (see plantstore migrate --help)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runMigrate(t, nil, tc.args...)
			if code != 2 || stdout != "" {
				t.Fatalf("exit %d, stdout %q; want 2 and nothing", code, stdout)
			}
			if !strings.HasPrefix(stderr, tc.stderr) || strings.Count(stderr, "\n") != 1 {
				t.Fatalf("stderr %q, want one line starting %q", stderr, tc.stderr)
			}
			if strings.Contains(stderr, "s3cret") {
				t.Fatal("stderr shows the password")
			}
		})
	}
}

// TestStartTimeoutBoundsMigrations: a replica waiting on another's
// migration lock gives up after --start-timeout, with exit 2 and one line.
func TestStartTimeoutBoundsMigrations(t *testing.T) {
	url := pgtest.NewDatabase(t)
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// Another replica, migrating: it holds the lock (pgstore's key).
	if _, err := conn.Exec(context.Background(), "SELECT pg_advisory_lock($1)", int64(0x706c616e7473)); err != nil {
		t.Fatal(err)
	}
	code, stderr := runToExit(t, buildBinary(t), nil, "PLANTSTORE_STORE=postgres",
		"PLANTSTORE_POSTGRES_URL="+url, "PLANTSTORE_START_TIMEOUT=500ms")
	want := "plantstore: the start did not finish within --start-timeout 500ms (a replica waits there for another's postgres migrations: raise it, or run plantstore migrate first)\n"
	if code != 2 || stderr != want {
		t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
}

func TestStartTimeoutMustBePositive(t *testing.T) {
	clearEnv(t)
	for _, arg := range []string{"--start-timeout=0s", "--start-timeout=-1m"} {
		_, err := parseConfig([]string{"--tokens=t", arg}, nil)
		want := "--start-timeout " + strings.TrimPrefix(arg, "--start-timeout=") + ": must be positive"
		if want == "--start-timeout -1m: must be positive" {
			want = "--start-timeout -1m0s: must be positive"
		}
		if err == nil || err.Error() != want {
			t.Errorf("%s: error = %v, want %q", arg, err, want)
		}
	}
}
