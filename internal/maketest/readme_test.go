package maketest

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// readmeBlock returns the shell block of README.md that follows the marker
// <!-- doc-test: name ... -->: the test runs what the reader copies.
func readmeBlock(t *testing.T, name string) string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- doc-test: " + regexp.QuoteMeta(name) + "[ \\-][^\\n]*\\n```sh\\n(.*?)\\n```")
	m := re.FindSubmatch(readme)
	if m == nil {
		t.Fatalf("README.md has no <!-- doc-test: %s --> marker before a ```sh block", name)
	}
	return string(m[1])
}

// startMakeRun runs make run as a reader would, in its own process group,
// on free loopback ports, with the binary in dir/bin and the plants in
// dir/data, and waits until it is ready. It returns the API's address.
func startMakeRun(t *testing.T, dir string) string {
	t.Helper()
	api, admin := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), makeTimeout)
	t.Cleanup(cancel)
	cmd := makeCommand(ctx, root(t), []string{"PLANTSTORE_DRAIN_DELAY=0s"}, "run",
		"HTTP_ADDR="+api, "ADMIN_ADDR="+admin,
		"DATA_DIR="+filepath.Join(dir, "data"), "BIN="+filepath.Join(dir, "bin", "plantstore"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	waitReady(t, "http://"+admin+"/readyz")
	return api
}

// TestReadmeWalkThrough runs the README's curl and command-line blocks as
// they stand against make run, in order, as a reader pastes them, and
// checks what they answer. Only the address differs: make run listens on a
// free port here, where the README says 127.0.0.1:8080.
func TestReadmeWalkThrough(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	api := startMakeRun(t, dir)
	tmp := t.TempDir() // TMPDIR of the blocks: the cli block's mktemp -d makes its directory here
	run := func(t *testing.T, name string) string {
		t.Helper()
		block := strings.ReplaceAll(readmeBlock(t, name), "127.0.0.1:8080", api)
		cmd := exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c", block)
		cmd.Dir = dir
		cmd.Env = os.Environ()
		for _, v := range []string{"PLANTSTORE_URL", "PLANTSTORE_TOKEN", "TMPDIR"} {
			cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, v+"=") })
		}
		cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		t.Logf("$ %s\n%s%s", strings.ReplaceAll(block, "\n", "\n$ "), stdout.String(), stderr.String())
		if err != nil {
			t.Fatalf("the README's %s block failed: %v\n%s", name, err, stderr.String())
		}
		return stdout.String()
	}
	// The statuses curl -i printed; an answer's body has no final newline,
	// so the next status line may follow it on its line.
	statuses := func(out string) []string {
		var got []string
		for _, m := range regexp.MustCompile(`HTTP/1\.1 (\d{3}) `).FindAllStringSubmatch(out, -1) {
			got = append(got, m[1])
		}
		return got
	}

	if got := statuses(run(t, "create")); !slices.Equal(got, []string{"200"}) {
		t.Errorf("the create block answered %v, want [200]", got)
	}
	// As its comments say: list, next page, by tag, get, 304, PUT, the
	// stale ETag's 412, delete; the list is the one plant the create
	// block made, and there is no next page.
	curl := run(t, "curl")
	if got, want := statuses(curl), []string{"200", "200", "200", "200", "304", "200", "412", "204"}; !slices.Equal(got, want) {
		t.Errorf("the curl block answered %v, want %v", got, want)
	}
	// The comment under the list says its answer's body, as it is.
	said := regexp.MustCompile(`plants\?limit=2'\n# 200 (\[[^\n]*?\])(?:,|\n)`).FindStringSubmatch(readmeBlock(t, "curl"))
	if said == nil || said[1] != `[{"id":1,"name":"Monstera","tag":"tropical"}]` {
		t.Errorf("the curl block's comment says the list answers %q, want the one plant the create block made", said)
	}
	answers := regexp.MustCompile(`HTTP/1\.1 \d{3} `).Split(curl, -1)
	if len(answers) < 3 || !strings.HasSuffix(answers[1], "\r\n\r\n"+`[{"id":1,"name":"Monstera","tag":"tropical"}]`) ||
		strings.Contains(strings.ToLower(answers[1]), "\r\nlink:") || !strings.HasSuffix(answers[2], "\r\n\r\n[]") {
		t.Errorf("the curl block's list and next page answered\n%q\nwant the one plant created, no Link, then []", answers[1:min(3, len(answers))])
	}

	out := run(t, "cli")
	out = regexp.MustCompile(`,"etag":"\\"[A-Za-z0-9_-]{22}\\""`).ReplaceAllString(out, `,"etag":"…"`)
	want := `{"id":1,"name":"Monstera","tag":"tropical"}
{"id":-5,"name":"Fern"}
ID  NAME      TAG
1   Monstera  "tropical"
{"id":1,"name":"Monstera deliciosa","tag":"tropical","etag":"…"}
[{"id":1,"name":"Monstera deliciosa","tag":"tropical"}]
[{"id":-5,"name":"Fern"}]
{"created":1,"unchanged":1,"skipped":0,"overwritten":0,"failed":0}
`
	if out != want {
		t.Errorf("the command-line block printed\n%s\nwant\n%s", out, want)
	}
	backups, err := filepath.Glob(filepath.Join(tmp, "*", "plants.ndjson"))
	if err != nil || len(backups) != 1 {
		t.Fatalf("the command-line block's export: %v in the temporary directory (%v), want one", backups, err)
	}
	backup, err := os.ReadFile(backups[0])
	if want := `{"id":-5,"name":"Fern"}` + "\n" + `{"id":1,"name":"Monstera deliciosa","tag":"tropical"}` + "\n"; err != nil || string(backup) != want {
		t.Errorf("plants.ndjson holds %q (%v), want %q", backup, err, want)
	}
	// The reader's directory (the checkout) is left as it was: make run's
	// bin and data only.
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"bin", "data"}) {
		t.Errorf("the README's blocks left %v in the reader's directory, want only make run's [bin data]", names)
	}
}
