package pgtest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func query(t *testing.T, url, sql string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var out string
	if err := conn.QueryRow(ctx, sql).Scan(&out); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func exec(t *testing.T, url, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func TestDatabasesAreFreshAndSeparate(t *testing.T) {
	a, b := pgtest.NewDatabase(t), pgtest.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases share the URL %s", a)
	}
	exec(t, a, "CREATE TABLE only_in_a (x int)")
	if got := query(t, a, "SELECT count(*)::text FROM pg_tables WHERE tablename = 'only_in_a'"); got != "1" {
		t.Fatalf("table in a: count %s", got)
	}
	if got := query(t, b, "SELECT count(*)::text FROM pg_tables WHERE tablename = 'only_in_a'"); got != "0" {
		t.Fatalf("a's table is visible in b: count %s", got)
	}
}

func TestServerSettings(t *testing.T) {
	url := pgtest.NewDatabase(t)
	for setting, want := range map[string]string{
		"fsync":              "on", // the real durability, as in production
		"server_encoding":    "UTF8",
		"listen_addresses":   "",
		"synchronous_commit": "on",
	} {
		if got := query(t, url, "SHOW "+setting); got != want {
			t.Errorf("%s = %q, want %q", setting, got, want)
		}
	}
}

func TestStopAndStart(t *testing.T) {
	c := pgtest.NewCluster(t)
	url := c.NewDatabase(t)
	query(t, url, "SELECT 'up'")
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(context.Background(), url); err == nil {
		t.Fatal("connected to a stopped server")
	}
	if _, err := os.Stat(filepath.Join(c.SocketDir(), ".s.PGSQL.5432")); !os.IsNotExist(err) {
		t.Fatalf("socket of a stopped server: %v", err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if got := query(t, url, "SELECT 'up again'"); got != "up again" {
		t.Fatalf("after restart: %q", got)
	}
}

// TestTCPClusterStopImmediate: a TCP cluster answers on its loopback port
// and on its socket, and a crash stop keeps what was committed.
func TestTCPClusterStopImmediate(t *testing.T) {
	c := pgtest.NewTCPCluster(t)
	db, err := c.CreateDatabase()
	if err != nil {
		t.Fatal(err)
	}
	tcp := c.TCPURL(db, c.TCPAddr())
	exec(t, tcp, "CREATE TABLE kept (v text)")
	exec(t, c.URL(db), "INSERT INTO kept VALUES ('committed')")
	if err := c.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	if got := query(t, tcp, "SELECT v FROM kept"); got != "committed" {
		t.Fatalf("after an immediate stop: %q, want committed", got)
	}
}
