package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/repo"
)

// TestServingLineSaysWhatRuns: once the start has succeeded, one info line
// says what runs, where, on which store and what is on, and holds no
// secret (the token and the webhook secret are searched for).
func TestServingLineSaysWhatRuns(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	dir := t.TempDir()
	hooks := filepath.Join(dir, "webhooks.yaml")
	if err := os.WriteFile(hooks, []byte("endpoints: [{name: crm, url: \"https://crm.example/in\", secrets: ["+secret+"]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	p := startProcess(t, "PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR="+data, "PLANTSTORE_WEBHOOKS_FILE="+hooks)
	if code := p.Signal(t, syscall.SIGTERM, 60*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.Output())
	}
	out := p.Output()
	var serving []map[string]any
	for line := range strings.Lines(out) {
		var entry map[string]any
		if json.Unmarshal([]byte(line), &entry) == nil && entry["msg"] == "serving" {
			delete(entry, "time")
			serving = append(serving, entry)
		}
	}
	want := map[string]any{
		"level": "info", "msg": "serving", "version": "dev",
		"api":   strings.TrimPrefix(p.API, "http://"),
		"admin": strings.TrimPrefix(p.Admin, "http://"),
		"store": "bolt", "data_dir": data, "tokens": 1.0,
		"jwt": "off", "webhooks": "on", "tracing": "off", "pprof": "off",
	}
	if len(serving) != 1 || !maps.Equal(serving[0], want) {
		t.Errorf("serving lines %v, want one: %v\n%s", serving, want, out)
	}
	for _, s := range []string{testToken, secret} {
		if strings.Contains(out, s) {
			t.Errorf("the output holds the secret %q", s)
		}
	}

	// The README's example has the same fields.
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	example := regexp.MustCompile("`(\\{\"msg\":\"serving\"[^`]*)`").FindSubmatch(readme)
	if example == nil {
		t.Fatal("README.md shows no serving line")
	}
	var shown map[string]any
	if err := json.Unmarshal(example[1], &shown); err != nil {
		t.Fatalf("README's serving line %s: %v", example[1], err)
	}
	shownKeys, wantKeys := slices.Sorted(maps.Keys(shown)), slices.Sorted(maps.Keys(want))
	wantKeys = slices.DeleteFunc(wantKeys, func(k string) bool { return k == "level" })
	if !slices.Equal(shownKeys, wantKeys) {
		t.Errorf("README's serving line has the fields %v, the program's %v", shownKeys, wantKeys)
	}
}

// TestPostgresTarget: the serving line names the database without its
// password, from a URL, a key=value string, or the PG* variables.
func TestPostgresTarget(t *testing.T) {
	for _, v := range []string{"PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGPASSWORD", "PGSERVICE", "PGSERVICEFILE"} {
		t.Setenv(v, "")
	}
	for _, tc := range []struct{ conn, env, want string }{
		{"postgres://plantstore:s3cret-pw@db.example:5433/plants?sslmode=disable", "", "plantstore@db.example:5433/plants"},
		{"host=db.example user=plantstore password=s3cret-pw dbname=plants sslmode=disable", "", "plantstore@db.example:5432/plants"},
		{"postgres://plantstore:s3cret-pw@[::1]:5432/plants?sslmode=disable", "", "plantstore@[::1]:5432/plants"},
		{"", "PGHOST=/run/pg PGUSER=app PGDATABASE=shop PGPASSWORD=s3cret-pw", "app@/run/pg:5432/shop"},
		{"postgres://plantstore:s3cret-pw@db.example:notaport/plants", "", "unparsable --postgres-url"},
	} {
		for kv := range strings.FieldsSeq(tc.env) {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		if got := postgresTarget(tc.conn); got != tc.want {
			t.Errorf("postgresTarget(%q) with %q = %q, want %q", tc.conn, tc.env, got, tc.want)
		}
	}
}
