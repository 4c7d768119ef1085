package main

// The postgres store through the whole program, against real PostgreSQL
// servers that internal/pgtest starts: the API on postgres, configuration
// from libpq's PG* variables, and a start that fails at once when the
// database cannot be reached.

import (
	"context"
	"flag"
	"io"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/deploy/k8stest"
	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/testmode"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/pgstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// TestMain starts the PostgreSQL cluster the tests share while the first
// tests run (most tests run on every store, postgres among them), and
// removes it at the end. Under -short it lets more tests run at once
// (raiseShortParallel).
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		testmode.RaiseParallel(shortParallelPerCPU * runtime.GOMAXPROCS(0))
	}
	// The manifests are rendered once per run, by the first test that reads
	// them: TestManifestsConfigureTheProgram, a serial test (it sets the
	// environment), for half a second. Rendered meanwhile, they are ready
	// when it comes, and the serial tests leave a processor idle.
	go func() { _, _ = k8stest.RenderAll() }()
	pgtest.MainStartingCluster(m)
}

// The black-box API tests that run on every store (forEachStore) run on
// postgres too, each on a fresh database of the shared test cluster.
func init() {
	testStores[plants.StorePostgres] = func(t *testing.T, cfg *config) {
		cfg.Plants.Store = plants.StorePostgres
		cfg.Plants.Postgres.URL = pgtest.NewDatabase(t)
	}
}

// postgresConfig is a testConfig on the postgres store, on a fresh database.
func postgresConfig(t *testing.T) config {
	t.Helper()
	return storeConfig(t, plants.StorePostgres)
}

// TestPostgresAPI runs the black-box suites of the other operations on
// postgres. The suites run at the same time, each on a database of its own,
// as goroutines rather than parallel subtests: parallel subtests would wait
// for a slot behind every other parallel test, and the walks, the longest
// of them, would start last and end the package's run alone.
func TestPostgresAPI(t *testing.T) {
	t.Parallel()
	var suites sync.WaitGroup
	for name, suite := range map[string]func(*testing.T, config){
		"List":            testListPlants,
		"Get":             testGetPlant,
		"Delete":          testDeletePlant,
		"WalkInterleaved": testWalkInterleaved,
		"WalkConcurrent":  testWalkConcurrent,
	} {
		suites.Go(func() { t.Run(name, func(t *testing.T) { suite(t, postgresConfig(t)) }) })
	}
	suites.Wait()
}

// TestPostgresNeedsNoURL: --store postgres without --postgres-url is a
// valid configuration; libpq's PG* variables and defaults fill it in.
func TestPostgresNeedsNoURL(t *testing.T) {
	clearEnv(t)
	cfg, err := parseConfig([]string{"--tokens=a", "--store=postgres"}, io.Discard)
	if err != nil || cfg.Plants.Store != plants.StorePostgres || cfg.Plants.Postgres.URL != "" {
		t.Fatalf("parseConfig = %+v, %v", cfg.Plants, err)
	}
}

// openPostgres opens the store on url directly, to check what the program
// left in the database.
func openPostgres(t *testing.T, url string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), pgstore.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestPostgresCreate(t *testing.T) {
	t.Parallel()
	cfg := postgresConfig(t)
	s := startServer(t, cfg)
	for body, want := range map[string]string{
		`{"id":1,"name":"Monstera","tag":"tropical"}`:      `{"name":"Monstera","tag":"tropical"}`,
		`{"id":-9223372036854775808,"name":""}`:            `{"name":""}`,
		`{"id":9223372036854775807,"name":"max","tag":""}`: `{"name":"max","tag":""}`,
	} {
		r := s.post(t, body)
		if r.Status != http.StatusOK || string(r.Body) != want {
			t.Fatalf("POST %s = %d %s, want 200 %s", body, r.Status, r.Body, want)
		}
		if r = s.post(t, body); r.Status != http.StatusOK || string(r.Body) != want {
			t.Fatalf("identical POST %s again = %d %s, want 200 %s", body, r.Status, r.Body, want)
		}
	}
	assertError(t, s.post(t, `{"id":1,"name":"Monstera"}`), http.StatusConflict)
	assertError(t, s.post(t, `{"id":1,"name":"Monstera","tag":"x"}`), http.StatusConflict)
	assertError(t, s.post(t, `{"id":2,"name":"nul \u0000"}`), http.StatusBadRequest)

	got, err := openPostgres(t, cfg.Plants.Postgres.URL).Get(context.Background(), 1)
	if want := (plant.Plant{ID: 1, Name: "Monstera", Tag: plant.StringPtr("tropical")}); err != nil || !got.Equal(want) {
		t.Fatalf("stored plant 1 = %+v, %v; want %+v", got, err, want)
	}
}

// TestPostgresFromLibpqEnvironment: with no --postgres-url the binary finds
// its database through PGHOST, PGUSER and PGDATABASE, as psql would.
func TestPostgresFromLibpqEnvironment(t *testing.T) {
	c := pgtest.Shared(t)
	dbCfg, err := pgx.ParseConfig(c.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "PLANTSTORE_STORE=postgres", "PLANTSTORE_POSTGRES_URL=",
		"PGHOST="+c.SocketDir(), "PGUSER="+pgtest.Superuser, "PGDATABASE="+dbCfg.Database, "PGSSLMODE=disable")
	if status := getStatus(t, p.Admin+"/readyz"); status != http.StatusOK {
		t.Fatalf("readyz = %d\n%s", status, p.Output())
	}
	if status, err := postPlant(http.DefaultClient, p.API, plant.Plant{ID: 5, Name: "env"}); err != nil || status != http.StatusOK {
		t.Fatalf("POST = %d, %v\n%s", status, err, p.Output())
	}
}

// TestPostgresUnreachableAtStart: a database that cannot be reached stops
// the program at start, after the connect timeout, with one line on stderr
// and exit code 2, so that Kubernetes restarts the pod with back-off and
// shows why.
func TestPostgresUnreachableAtStart(t *testing.T) {
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := refused.Addr().String()
	refused.Close()
	noServer := t.TempDir() // a socket directory where nothing listens
	for where, url := range map[string]string{
		noServer:    "postgres://postgres:s3cret@/plants?host=" + noServer,
		refusedAddr: "postgres://postgres:s3cret@" + refusedAddr + "/plants", // pgx tries TLS, then plain
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, buildBinary(t))
		cmd.Env = []string{
			"PLANTSTORE_HTTP_ADDR=127.0.0.1:0",
			"PLANTSTORE_ADMIN_ADDR=127.0.0.1:0",
			"PLANTSTORE_TOKENS=" + testToken,
			"PLANTSTORE_STORE=postgres",
			"PLANTSTORE_POSTGRES_URL=" + url,
			"PLANTSTORE_POSTGRES_CONNECT_TIMEOUT=1s",
		}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 2 {
			t.Fatalf("%s: exit code = %d (%v), want 2\nstderr: %s\nstdout: %s", where, code, err, stderr.String(), stdout.String())
		}
		line := stderr.String()
		if strings.Count(line, "\n") != 1 || !strings.HasPrefix(line, "plantstore: postgres: migrate (--postgres-url): failed to connect") ||
			!strings.Contains(line, where) {
			t.Fatalf("stderr = %q, want one line saying the migration could not connect to %s", line, where)
		}
		if strings.Contains(stderr.String()+stdout.String(), "s3cret") {
			t.Fatal("the output shows the database password")
		}
	}
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// getAdmin gets path from the admin listener.
func getAdmin(t *testing.T, s *testServer, path string) response {
	t.Helper()
	resp, err := s.Client.Get(s.Admin + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// On postgres the scrape has the replication series (docs/reliability.md,
// "Replication"), at zero on a database without trouble, the change log
// listener's one connection, and passes promtool.
func TestPostgresReplicationMetrics(t *testing.T) {
	t.Parallel()
	promtool := requireProgram(t, "promtool", "apt-get install prometheus")
	s := startServer(t, postgresConfig(t))
	if r := s.post(t, `{"id":1,"name":"Monstera"}`); r.Status != http.StatusOK {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	const listening = "plantstore_postgres_change_listens_total 1"
	var text string
	eventually(t, 30*time.Second, "the listener's connection counted", func() bool { // it connects in the background after the start
		text = scrape(t, s, false)
		return slices.Contains(strings.Split(text, "\n"), listening)
	})
	for _, series := range []string{
		"plantstore_postgres_commits_orphaned 0",
		"plantstore_postgres_commits_outlived_total 0",
		"plantstore_postgres_commits_unreplicated_total 0",
	} {
		if !slices.Contains(strings.Split(text, "\n"), series) {
			t.Errorf("the scrape has no line %q; its postgres series:\n%s", series, grepLines(text, "plantstore_postgres"))
		}
	}
	checkMetrics(t, promtool, text)
}
