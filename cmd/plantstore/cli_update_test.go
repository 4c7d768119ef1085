package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestCLIUpdateKeepsTheTag: plants update without --tag keeps the stored
// tag; --tag replaces it (--tag ” is the empty tag, not none); --no-tag
// removes it; a stale --if-match is refused with the server's 412, as the
// same update with --tag is.
func TestCLIUpdateKeepsTheTag(t *testing.T) {
	clearEnv(t)
	s := startServer(t, testConfig(t))
	wantCLI(t, s, 0, `{"id":1,"name":"Monstera","tag":"tropical"}`+"\n", "", "plants", "create", "1", "--name", "Monstera", "--tag", "tropical")
	etag := cliETag(t, s, 1)

	steps := []struct {
		args []string
		out  string // stdout without the etag
	}{
		{[]string{"update", "1", "--name", "Monstera deliciosa"}, `{"id":1,"name":"Monstera deliciosa","tag":"tropical"}`},
		{[]string{"update", "1", "--name", "Monstera", "--tag", "jungle"}, `{"id":1,"name":"Monstera","tag":"jungle"}`},
		{[]string{"update", "1", "--name", "Monstera", "--tag", ""}, `{"id":1,"name":"Monstera","tag":""}`},
		{[]string{"update", "1", "--name", "Monstera", "--no-tag"}, `{"id":1,"name":"Monstera"}`},
		{[]string{"update", "1", "--name", "Monstera again"}, `{"id":1,"name":"Monstera again"}`},
	}
	for _, step := range steps {
		code, out, stderr := runCLI(t, s, append([]string{"plants"}, step.args...)...)
		if i := strings.Index(out, `,"etag":`); i >= 0 {
			out = out[:i] + "}\n"
		}
		if code != 0 || out != step.out+"\n" || stderr != "" {
			t.Fatalf("plants %s = exit %d, %q, stderr %q; want %s", strings.Join(step.args, " "), code, out, stderr, step.out)
		}
		// What is stored is what was printed.
		wantCLI(t, s, 0, "["+step.out+"]\n", "", "plants", "list")
	}
	// The ETag of the first version is stale now: kept tag or not, 412.
	const stale = "plantstore plants update: 412 Precondition Failed: plant 1 has changed: If-Match does not match its current ETag\n"
	wantCLI(t, s, 1, "", stale, "plants", "update", "1", "--name", "x", "--if-match", etag)
	wantCLI(t, s, 1, "", stale, "plants", "update", "1", "--name", "x", "--tag", "t", "--if-match", etag)
	wantCLI(t, s, 2, "", "plantstore plants update: --tag and --no-tag exclude each other\n", "plants", "update", "1", "--name", "x", "--tag", "t", "--no-tag")
	wantCLI(t, s, 1, "", "plantstore plants update: 404 Not Found: plant 2 not found\n", "plants", "update", "2", "--name", "x")
	// The current ETag names the version: the update keeps its (absent) tag.
	etag = cliETag(t, s, 1)
	code, out, stderr := runCLI(t, s, "plants", "update", "1", "--name", "y", "--if-match", etag)
	if code != 0 || !strings.HasPrefix(out, `{"id":1,"name":"y","etag":`) {
		t.Fatalf("update with the current ETag = exit %d, %q, stderr %q", code, out, stderr)
	}
}

// cliETag is the ETag plants get prints for the plant.
func cliETag(t *testing.T, s *testServer, id int64) string {
	t.Helper()
	code, out, stderr := runCLI(t, s, "plants", "get", strconv.FormatInt(id, 10))
	var p struct{ ETag string }
	if err := json.Unmarshal([]byte(out), &p); code != 0 || err != nil || p.ETag == "" {
		t.Fatalf("plants get %d = exit %d, %q (%v), stderr %q", id, code, out, err, stderr)
	}
	return p.ETag
}
