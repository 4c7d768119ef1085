package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestExportNeverDestroysABackup: export -f replaces its file only when
// the whole export succeeded. A wrong token, or a server failing in the
// middle of the walk, leaves the old file byte for byte, leaves no
// temporary file behind, and exits 1; a successful export replaces the
// file, keeping its permissions.
func TestExportNeverDestroysABackup(t *testing.T) {
	clearEnv(t)
	s := startServer(t, testConfig(t))
	for _, body := range []string{`{"id":1,"name":"a"}`, `{"id":2,"name":"b","tag":"t"}`, `{"id":3,"name":"c"}`} {
		if r := s.post(t, body); r.Status != http.StatusOK {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
	}
	// A server that fails in the middle of the walk: pages of 2 plants,
	// and a 500 for every page after the first.
	target, err := url.Parse(s.API)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("after") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":500,"message":"the store failed"}`))
			return
		}
		q := r.URL.Query()
		q.Set("limit", "2")
		r.URL.RawQuery = q.Encode()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(failing.Close)

	dir := t.TempDir()
	backup := filepath.Join(dir, "backup.ndjson")
	old := []byte(`{"id":1,"name":"the old backup"}` + "\n")
	if err := os.WriteFile(backup, old, 0o640); err != nil {
		t.Fatal(err)
	}
	unchanged := func(t *testing.T) {
		t.Helper()
		if got, err := os.ReadFile(backup); err != nil || !bytes.Equal(got, old) {
			t.Fatalf("the backup now holds %q (%v), want the old %q", got, err, old)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if !slices.Equal(names, []string{"backup.ndjson"}) {
			t.Fatalf("the directory holds %q, want only backup.ndjson", names)
		}
	}
	for _, tc := range []struct {
		name, api, token, stderr string
	}{
		{"wrong token", s.API, "wrong-token", "plantstore export: 401 Unauthorized: the bearer token is not valid"},
		{"failure mid-walk", failing.URL, testToken, "plantstore export: 500 Internal Server Error: the store failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"export", "-f", backup, "--url", tc.api, "--token", tc.token}, &stdout, &stderr)
			if code != 1 || stdout.Len() != 0 || stderr.String() != tc.stderr+" ("+backup+" is unchanged)\n" {
				t.Fatalf("export = exit %d, stdout %q, stderr %q; want exit 1 and stderr %q",
					code, stdout.String(), stderr.String(), tc.stderr+" ("+backup+" is unchanged)\n")
			}
			unchanged(t)
		})
	}

	// Through the proxy's small pages with no failure, and directly: the
	// file is replaced whole, with its permissions.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"export", "-f", backup, "--url", s.API, "--token", testToken}, &stdout, &stderr); code != 0 {
		t.Fatalf("export = %d, stderr %q", code, stderr.String())
	}
	want := `{"id":1,"name":"a"}` + "\n" + `{"id":2,"name":"b","tag":"t"}` + "\n" + `{"id":3,"name":"c"}` + "\n"
	if got, err := os.ReadFile(backup); err != nil || string(got) != want {
		t.Fatalf("the backup holds %q (%v), want %q", got, err, want)
	}
	if info, err := os.Stat(backup); err != nil || info.Mode().Perm() != 0o640 {
		t.Fatalf("the backup's mode is %v (%v), want 0640 as before", info.Mode(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("the directory holds %d files after a successful export, want 1", len(entries))
	}
}
