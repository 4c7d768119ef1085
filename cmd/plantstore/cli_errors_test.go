package main

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/cli"
)

// TestCLIIfMatchOneParser: --if-match is read by the server's own parser,
// for update (keeping the tag or not) and delete alike: a value the server
// would refuse is the same usage error (exit 2) on each, and an ETag as
// get prints it but without its quotes is quoted, so that it matches.
func TestCLIIfMatchOneParser(t *testing.T) {
	clearEnv(t)
	s := startServer(t, testConfig(t))
	wantCLI(t, s, 0, `{"id":1,"name":"a","tag":"t"}`+"\n", "", "plants", "create", "1", "--name", "a", "--tag", "t")
	bare := func() string { return strings.Trim(cliETag(t, s, 1), `"`) }

	// Not an ETag: one answer for every flag and method, before any request.
	for _, args := range [][]string{
		{"update", "1", "--name", "x"},
		{"update", "1", "--name", "x", "--tag", "u"},
		{"update", "1", "--name", "x", "--no-tag"},
		{"delete", "1"},
	} {
		for _, value := range []string{"nope", `"a" "b"`, ","} {
			cmd := "plants " + args[0]
			want := "plantstore " + cmd + ": --if-match " + strconv.Quote(value) +
				`: not an ETag; want the etag that plants get prints (quotes optional), a list of them, or "*"` + "\n"
			wantCLI(t, s, 2, "", want, append(append([]string{"plants"}, args...), "--if-match", value)...)
		}
	}

	// The current ETag without its quotes matches, keeping the tag or not.
	etag := bare()
	code, out, stderr := runCLI(t, s, "plants", "update", "1", "--name", "b", "--if-match", etag)
	if code != 0 || !strings.HasPrefix(out, `{"id":1,"name":"b","tag":"t","etag":`) || stderr != "" {
		t.Fatalf("update keeping the tag, bare current ETag = exit %d, %q, stderr %q; want 0", code, out, stderr)
	}
	stale, etag := etag, bare()
	code, out, stderr = runCLI(t, s, "plants", "update", "1", "--name", "c", "--tag", "u", "--if-match", etag)
	if code != 0 || !strings.HasPrefix(out, `{"id":1,"name":"c","tag":"u","etag":`) || stderr != "" {
		t.Fatalf("update with --tag, bare current ETag = exit %d, %q, stderr %q; want 0", code, out, stderr)
	}
	// A stale one is the server's 412, on every method, bare or quoted.
	const changed = ": 412 Precondition Failed: plant 1 has changed: If-Match does not match its current ETag\n"
	wantCLI(t, s, 1, "", "plantstore plants update"+changed, "plants", "update", "1", "--name", "x", "--if-match", stale)
	wantCLI(t, s, 1, "", "plantstore plants update"+changed, "plants", "update", "1", "--name", "x", "--no-tag", "--if-match", stale)
	wantCLI(t, s, 1, "", "plantstore plants delete"+changed, "plants", "delete", "1", "--if-match", stale)
	wantCLI(t, s, 1, "", "plantstore plants delete"+changed, "plants", "delete", "1", "--if-match", `"`+stale+`"`)
	// A list of bare ETags is quoted element by element.
	wantCLI(t, s, 0, "", "", "plants", "delete", "1", "--if-match", stale+", "+bare())
}

// TestCLIURLWithoutScheme: a --url (or PLANTSTORE_URL) that is not an
// http(s) URL is a usage error (exit 2) that says what to write, not
// url.Parse's words about colons.
func TestCLIURLWithoutScheme(t *testing.T) {
	clearEnv(t)
	for _, tc := range []struct {
		args   []string
		env    string
		stderr string
	}{
		{[]string{"--url", "127.0.0.1:8080"}, "",
			`plantstore plants list: --url "127.0.0.1:8080": want a URL with its scheme, such as http://127.0.0.1:8080` + "\n"},
		{[]string{"--url", "localhost"}, "",
			`plantstore plants list: --url "localhost": want a URL with its scheme, such as http://localhost` + "\n"},
		{[]string{"--url", "ftp://127.0.0.1:8080"}, "",
			`plantstore plants list: --url "ftp://127.0.0.1:8080": want an http:// or https:// URL such as http://127.0.0.1:8080` + "\n"},
		{nil, "127.0.0.1:9999",
			`plantstore plants list: PLANTSTORE_URL "127.0.0.1:9999": want a URL with its scheme, such as http://127.0.0.1:9999` + "\n"},
	} {
		t.Setenv("PLANTSTORE_URL", tc.env)
		args := append([]string{"plants", "list", "--token", testToken}, tc.args...)
		if code, out, stderr := runArgs(args...); code != 2 || out != "" || stderr != tc.stderr {
			t.Errorf("plantstore %s (PLANTSTORE_URL=%s) = exit %d, %q, stderr %q; want 2 and %q",
				strings.Join(args, " "), tc.env, code, out, stderr, tc.stderr)
		}
	}
}

// TestCLINothingAnswers: when nothing listens at the URL, the client
// commands and healthcheck say which URL they tried, where it came from
// and what to check, instead of Go's "dial tcp ...".
func TestCLINothingAnswers(t *testing.T) {
	clearEnv(t)
	addr := closedAddr(t)
	const check = "connection refused; is plantstore running, and is that its API address?\n"
	for _, args := range [][]string{{"plants", "list"}, {"plants", "get", "1"}, {"export"}} {
		code, out, stderr := runArgs(append(args, "--token", testToken, "--url", "http://"+addr)...)
		want := "plantstore " + strings.Join(args[:min(2, len(args))], " ") + ": cannot connect to http://" + addr + " (--url): " + check
		if code != 1 || out != "" || stderr != want {
			t.Errorf("plantstore %s = exit %d, %q, stderr %q; want 1 and %q", strings.Join(args, " "), code, out, stderr, want)
		}
	}
	// What a command adds to the error stays.
	backup := filepath.Join(t.TempDir(), "backup.ndjson")
	want := "plantstore export: cannot connect to http://" + addr + " (--url): " + strings.TrimSuffix(check, "\n") + " (" + backup + " is unchanged)\n"
	if code, _, stderr := runArgs("export", "-f", backup, "--token", testToken, "--url", "http://"+addr); code != 1 || stderr != want {
		t.Errorf("export -f = exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	t.Setenv("PLANTSTORE_URL", "http://"+addr)
	want = "plantstore plants list: cannot connect to http://" + addr + " (PLANTSTORE_URL): " + check
	if code, _, stderr := runArgs("plants", "list", "--token", testToken); code != 1 || stderr != want {
		t.Errorf("with PLANTSTORE_URL: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}

	want = "plantstore healthcheck: cannot connect to http://" + addr + "/readyz (--admin-addr): connection refused; " +
		"is plantstore running, and is that its admin listener's address?\n"
	if code, out, stderr := runArgs("healthcheck", "--admin-addr", addr); code != 1 || out != "" || stderr != want {
		t.Errorf("healthcheck = exit %d, %q, stderr %q; want 1 and %q", code, out, stderr, want)
	}
}

// closedAddr is a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// TestCLINegativeIDSaysToUseDoubleDash: a negative id before -- reads as
// an unknown flag; the message says to put it after --.
func TestCLINegativeIDSaysToUseDoubleDash(t *testing.T) {
	clearEnv(t)
	for _, verb := range []string{"create", "get", "update", "delete"} {
		want := "plantstore plants " + verb + ": unknown flag -7; put -- before a negative id: plantstore plants " + verb +
			" [flags] -- -7 (see plantstore plants " + verb + " --help)\n"
		if code, out, stderr := runArgs("plants", verb, "-7", "--name", "x"); code != 2 || out != "" || stderr != want {
			t.Errorf("plants %s -7 = exit %d, %q, stderr %q; want 2 and %q", verb, code, out, stderr, want)
		}
	}
	// Elsewhere a number is just an unknown flag.
	want := "plantstore plants list: unknown flag --7 (see plantstore plants list --help)\n"
	if code, _, stderr := runArgs("plants", "list", "-7"); code != 2 || stderr != want {
		t.Errorf("plants list -7 = exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
}

// TestCLIHelpForAVerb: help plants VERB and plants help VERB print the
// verb's own help (as plants VERB --help does), not the plants overview;
// the overview gives each verb one whole sentence.
func TestCLIHelpForAVerb(t *testing.T) {
	clearEnv(t)
	_, overview, _ := runArgs("plants", "--help")
	for _, verb := range []string{"create", "get", "list", "update", "delete", "watch"} {
		_, own, _ := runArgs("plants", verb, "--help")
		if !strings.HasPrefix(own, "usage: plantstore plants "+verb+" ") || own == overview {
			t.Fatalf("plants %s --help printed\n%s", verb, own)
		}
		for _, args := range [][]string{{"help", "plants", verb}, {"plants", "help", verb}} {
			if code, out, stderr := runArgs(args...); code != 0 || out != own || stderr != "" {
				t.Errorf("plantstore %s = exit %d, stderr %q, stdout\n%s\nwant plants %s --help's", strings.Join(args, " "), code, stderr, out, verb)
			}
		}
	}
	want := "plantstore plants: unknown verb \"grow\"; usage: plantstore plants create|get|list|update|delete|watch [flags]\n"
	if code, _, stderr := runArgs("help", "plants", "grow"); code != 2 || stderr != want {
		t.Errorf("help plants grow = exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
	// Each verb's line in the overview is a whole sentence that fits.
	lines := strings.Split(overview, "\n")
	verbs := 0
	for i, line := range lines {
		if strings.HasPrefix(line, "  plantstore plants ") {
			verbs++
			what := lines[i+1]
			if !strings.HasPrefix(what, "      ") || !strings.HasSuffix(what, ".") || len(what) > 80 {
				t.Errorf("the overview says of %q: %q; want one sentence within 80 columns", line, what)
			}
		}
	}
	if verbs != 6 {
		t.Errorf("the overview lists %d verbs, want 6:\n%s", verbs, overview)
	}
}

// TestCLIOutputFlagWhereItWorks: -o is a flag of exactly the commands
// whose output it changes, and -o table gives a table on each of them.
func TestCLIOutputFlagWhereItWorks(t *testing.T) {
	clearEnv(t)
	var withO []string
	for _, c := range cli.Commands() {
		if slices.Contains(c.Flags, "-o") {
			withO = append(withO, strings.Join(c.Words, " "))
		}
	}
	// The webhooks commands' tables are checked with a server that sends
	// webhooks (TestWebhookAttemptsOnRecord).
	if want := []string{"plants create", "plants get", "plants list", "plants update", "webhooks attempts", "webhooks message", "webhooks redeliver", "import"}; !slices.Equal(withO, want) {
		t.Errorf("-o is a flag of %q, want %q", withO, want)
	}
	s := startServer(t, testConfig(t))
	wantCLI(t, s, 0, "ID  NAME  TAG\n1   a     \"t\"\n", "", "plants", "create", "1", "--name", "a", "--tag", "t", "-o", "table")
	wantCLI(t, s, 0, "ID  NAME  TAG\n1   b     \"t\"\n", "", "plants", "update", "1", "--name", "b", "-o", "table")
	wantCLI(t, s, 0, "ID  NAME  TAG\n1   b     \"t\"\n", "", "plants", "get", "1", "-o", "table")
	wantCLI(t, s, 0, "ID  NAME  TAG\n1   b     \"t\"\n", "", "plants", "list", "-o", "table")
	file := filepath.Join(t.TempDir(), "plants.ndjson")
	if err := os.WriteFile(file, []byte(`{"id":1,"name":"b","tag":"t"}`+"\n"+`{"id":2,"name":"c"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantCLI(t, s, 0, "created 1, unchanged 1, skipped 0, overwritten 0, failed 0\n", "", "import", "-f", file, "-o", "table")
	wantCLI(t, s, 2, "", "plantstore plants delete: unknown flag --o (see plantstore plants delete --help)\n", "plants", "delete", "1", "-o", "table")
	wantCLI(t, s, 2, "", "plantstore export: unknown flag --o (see plantstore export --help)\n", "export", "-o", "table")
	wantCLI(t, s, 2, "", "plantstore plants watch: unknown flag --o (see plantstore plants watch --help)\n", "plants", "watch", "-o", "json")
}

// TestCLIListOnePage: plants list --limit N prints one page, and while
// more remain says on stderr the command that prints the next; following
// those commands walks every plant once. Without --limit it walks them all.
func TestCLIListOnePage(t *testing.T) {
	clearEnv(t)
	s := startServer(t, testConfig(t))
	for _, id := range []string{"1", "2", "3"} {
		wantCLI(t, s, 0, `{"id":`+id+`,"name":"p`+id+`","tag":"t"}`+"\n", "", "plants", "create", id, "--name", "p"+id, "--tag", "t")
	}
	wantCLI(t, s, 0, `{"id":-4,"name":"p-4"}`+"\n", "", "plants", "create", "--name", "p-4", "--", "-4")
	wantCLI(t, s, 0, `[{"id":-4,"name":"p-4"},{"id":1,"name":"p1","tag":"t"}]`+"\n",
		"next page: plantstore plants list --limit 2 --after 1\n", "plants", "list", "--limit", "2")
	wantCLI(t, s, 0, `[{"id":2,"name":"p2","tag":"t"},{"id":3,"name":"p3","tag":"t"}]`+"\n", "", "plants", "list", "--limit", "2", "--after", "1")
	wantCLI(t, s, 0, `[{"id":1,"name":"p1","tag":"t"},{"id":2,"name":"p2","tag":"t"},{"id":3,"name":"p3","tag":"t"}]`+"\n", "",
		"plants", "list", "--after", "-4")
	wantCLI(t, s, 0, `[{"id":2,"name":"p2","tag":"t"}]`+"\n", "next page: plantstore plants list --limit 1 --after 2 --tag 't'\n",
		"plants", "list", "--limit", "1", "--after", "1", "--tag", "t")
	wantCLI(t, s, 0, "[]\n", "", "plants", "list", "--limit", "5", "--after", "3")
	wantCLI(t, s, 0, `[{"id":-4,"name":"p-4"},{"id":1,"name":"p1","tag":"t"},{"id":2,"name":"p2","tag":"t"},{"id":3,"name":"p3","tag":"t"}]`+"\n", "",
		"plants", "list")
	wantCLI(t, s, 2, "", "plantstore plants list: --limit 0: want 1 to 1000\n", "plants", "list", "--limit", "0")
}
