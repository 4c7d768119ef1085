package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants"
)

// TestMoveBoltToPostgres is docs/operations.md's move, end to end: a bolt
// server with plants (tags, unicode, the extreme ids), export, a postgres
// server, import, export again: the two NDJSON files are byte-identical.
func TestMoveBoltToPostgres(t *testing.T) {
	t.Parallel()
	boltCfg := testConfig(t)
	boltCfg.Plants.Store, boltCfg.Plants.Bolt.DataDir = plants.StoreBolt, t.TempDir()
	from := startServer(t, boltCfg)
	bodies := []string{
		`{"id":-9223372036854775808,"name":"min"}`,
		`{"id":9223372036854775807,"name":"max","tag":""}`,
		`{"id":0,"name":"","tag":"empty name"}`,
		`{"id":1,"name":"Monstera","tag":"tropical"}`,
		`{"id":2,"name":"Fílodendro ☘ 🌿 \"quoted\" <&> \\ \t","tag":"日本語"}`,
		`{"id":-1,"name":"` + strings.Repeat("ü", 1024) + `","tag":"` + strings.Repeat("x", 1024) + `"}`,
	}
	for _, b := range bodies {
		if r := from.post(t, b); r.Status != 200 {
			t.Fatalf("create %s = %d %s", b, r.Status, r.Body)
		}
	}
	var more []string
	for i := range 2500 { // more than two pages of 1000
		more = append(more, `{"id":`+strconv.Itoa(1000+i*7)+`,"name":"plant `+strconv.Itoa(i)+`","tag":"t`+strconv.Itoa(i%5)+`"}`)
	}
	importAll(t, from, more)
	bodies = append(bodies, more...)
	dir := t.TempDir()
	first, second := filepath.Join(dir, "bolt.ndjson"), filepath.Join(dir, "postgres.ndjson")
	_, followed := listPlants(t, from.API) // a follower's cursor at the move
	wantCLI(t, from, 0, "", "", "export", "-f", first)

	pgCfg := testConfig(t)
	pgCfg.Plants.Store, pgCfg.Plants.Postgres.URL = plants.StorePostgres, pgtest.NewDatabase(t)
	to := startServer(t, pgCfg)
	n := strconv.Itoa(len(bodies))
	wantCLI(t, to, 0, `{"created":`+n+`,"unchanged":0,"skipped":0,"overwritten":0,"failed":0}`+"\n", "", "import", "-f", first, "--workers", "4")
	// Resumable: a second run finds every plant there already.
	wantCLI(t, to, 0, `{"created":0,"unchanged":`+n+`,"skipped":0,"overwritten":0,"failed":0}`+"\n", "", "import", "-f", first)
	wantCLI(t, to, 0, "", "", "export", "-f", second)

	// The postgres store is another store: the follower is told to list
	// again, and its versions are past the bolt store's, for a receiver
	// that applies by version.
	if status, _, body := historyGet(t, to.API, "/plants/changes?after="+followed); status != http.StatusGone {
		t.Fatalf("the bolt store's cursor at the postgres store: %d %s, want 410", status, body)
	}
	status, _, body := historyGet(t, to.API, "/plants/changes?limit=1")
	var page feedPage
	if err := json.Unmarshal(body, &page); err != nil || status != http.StatusOK || len(page.Changes) != 1 ||
		page.Changes[0].Version <= feedCursor(t, followed).Version {
		t.Fatalf("the postgres store's first change: %d %s, want a version past the bolt store's %d", status, body, feedCursor(t, followed).Version)
	}

	a, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatalf("the export after the move differs (%d bytes before, %d after)", len(a), len(b))
	}
	if lines := bytes.Count(a, []byte("\n")); lines != len(bodies) {
		t.Fatalf("export has %d lines, want %d", lines, len(bodies))
	}
	if !bytes.HasPrefix(a, []byte(`{"id":-9223372036854775808,"name":"min"}`+"\n")) {
		t.Fatalf("export does not start with the smallest id: %.80s", a)
	}
}

// TestImportConflictsAndBadLines: a conflicting id stops the import (exit
// 1) unless --on-conflict says otherwise; a bad line stops it before any
// plant is sent, naming the line.
func TestImportConflictsAndBadLines(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	if r := s.post(t, `{"id":2,"name":"already here"}`); r.Status != 200 {
		t.Fatal(r.Status)
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.ndjson", `{"id":1,"name":"a"}`+"\n"+`{"id":2,"name":"b","tag":"t"}`+"\n")
	wantCLI(t, s, 1, `{"created":1,"unchanged":0,"skipped":0,"overwritten":0,"failed":1}`+"\n",
		"plantstore import: plant 2: conflict: id already stored with a different name or tag (use --on-conflict=skip or overwrite)\n",
		"import", "-f", good, "--workers", "1")
	wantCLI(t, s, 0, `{"created":0,"unchanged":1,"skipped":1,"overwritten":0,"failed":0}`+"\n", "", "import", "-f", good, "--on-conflict", "skip")
	wantCLI(t, s, 0, "created 0, unchanged 1, skipped 0, overwritten 1, failed 0\n", "", "import", "-f", good, "--on-conflict", "overwrite", "-o", "table")
	wantCLI(t, s, 0, `[{"id":2,"name":"b","tag":"t"}]`+"\n", "", "plants", "list", "--tag", "t")

	for content, msg := range map[string]string{
		`{"id":3,"name":"c"}` + "\n" + `{"id":4,"name":"d"` + "\n":    "line 2: the line ends before the JSON object is complete",
		`{"id":3,"name":"c"}` + "\n\n" + `{"id":3,"name":"c"}` + "\n": "line 3: id 3 is already on line 1",
		`{"id":3.5,"name":"c"}` + "\n":                                `line 1: "id" must be an integer, not 3.5`,
		`{"id":3,"name":"c","tag":null}` + "\n":                       `line 1: "tag" must be a string, not null`,
		`{"id":3}` + "\n":                                             `line 1: "name" is required`,
		`[1]` + "\n":                                                  "line 1: the line must be a JSON object, not an array",
		`{"id":3,"name":"c"} {"id":4,"name":"d"}` + "\n":              "line 1: the line has data after the JSON object",
		`{"id":3,"name":"` + strings.Repeat("x", 1025) + `"}` + "\n":  `line 1: "name" must be at most 1024 characters`,
	} {
		bad := write("bad.ndjson", content)
		wantCLI(t, s, 1, "", "plantstore import: "+msg+"; nothing was imported\n", "import", "-f", bad)
	}
	if r := s.get(t, "/plants/3"); r.Status != 404 {
		t.Fatalf("a bad file imported plant 3: %d", r.Status)
	}
}
