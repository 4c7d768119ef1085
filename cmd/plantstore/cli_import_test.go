package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportIsAsStrictAsTheAPI: import checks each line with the API's own
// decoder. A line the server would refuse (invalid UTF-8, a repeated key,
// a miscased key, an id written as a string) stops the import with the
// server's own words and the line's number, before any plant is sent; a
// line the server takes (an unknown key, which it ignores) is imported.
func TestImportIsAsStrictAsTheAPI(t *testing.T) {
	clearEnv(t)
	s := startServer(t, testConfig(t))
	dir := t.TempDir()
	for i, tc := range []struct {
		name, line, refusal string // refusal in the server's words; "" when it takes the line
	}{
		{"invalid UTF-8", `{"id":3,"name":"caf` + "\xe9" + `"}`, "request body is not valid UTF-8"},
		{"repeated key", `{"id":3,"name":"a","name":"b"}`, "request body repeats the key /name; each key may appear once"},
		{"miscased key", `{"id":3,"Name":"a"}`, `"name" is required`},
		{"id as a string", `{"id":"3","name":"a"}`, `"id" must be an integer, not a string`},
		{"unknown key", `{"id":3,"name":"a","colour":"red"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The server's answer to the same JSON, as a create.
			r := s.post(t, tc.line)
			if tc.refusal == "" {
				if r.Status != http.StatusOK {
					t.Fatalf("the server answered %d %s, want 200", r.Status, r.Body)
				}
				if r := s.delete(t, "/plants/3"); r.Status != http.StatusNoContent {
					t.Fatalf("delete: %d", r.Status)
				}
			} else {
				assertError(t, r, http.StatusBadRequest)
				var e struct{ Message string }
				r.JSON(t, &e)
				if e.Message != tc.refusal {
					t.Fatalf("the server refused with %q, want %q", e.Message, tc.refusal)
				}
			}

			file := filepath.Join(dir, "plants.ndjson")
			content := `{"id":1,"name":"good"}` + "\n" + tc.line + "\n"
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := run([]string{"import", "-f", file, "--url", s.API, "--token", testToken}, &stdout, &stderr)
			if tc.refusal == "" {
				if code != 0 || stderr.Len() != 0 {
					t.Fatalf("import = exit %d, stderr %q; want 0", code, stderr.String())
				}
				if r := s.get(t, "/plants/3"); r.Status != http.StatusOK || string(r.Body) != `{"id":3,"name":"a"}` {
					t.Fatalf("plant 3 is %d %s, want the line without its unknown key", r.Status, r.Body)
				}
				for _, id := range []string{"1", "3"} {
					s.delete(t, "/plants/"+id)
				}
				return
			}
			// The decoder's words, with "the line" for "request body".
			want := "plantstore import: line 2: " + strings.Replace(tc.refusal, "request body", "the line", 1) + "; nothing was imported\n"
			if code != 1 || stdout.Len() != 0 || stderr.String() != want {
				t.Fatalf("import %d = exit %d, stdout %q, stderr %q; want exit 1, stderr %q", i, code, stdout.String(), stderr.String(), want)
			}
			if r := s.get(t, "/plants/1"); r.Status != http.StatusNotFound {
				t.Fatalf("the import sent line 1 before refusing line 2: plant 1 is %d %s", r.Status, r.Body)
			}
		})
	}
}
