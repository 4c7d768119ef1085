package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLINeverPrintsASecret: a token given by flag, by environment or by
// file, and the server's tokens and webhook secret in its environment, are
// never in any output of any command: its --help, a bad flag, a bad
// argument, or an answer 401 from a real server that knows none of them.
func TestCLINeverPrintsASecret(t *testing.T) {
	clearEnv(t)
	s := startServer(t, testConfig(t))
	dir := t.TempDir()
	secrets := map[string]string{
		"flag":    "flag-secret-b7f3a1",
		"env":     "env-secret-9c1b44",
		"file":    "file-secret-2d4e08",
		"tokens":  "tokens-secret-5e6f19",
		"webhook": "webhook-secret-77aa03",
	}
	tokenFile := filepath.Join(dir, "token")
	webhooksFile := filepath.Join(dir, "webhooks.yaml")
	importFile := filepath.Join(dir, "plants.ndjson")
	for path, content := range map[string]string{
		tokenFile:    secrets["file"] + "\n",
		webhooksFile: "endpoints:\n  - name: a\n    url: http://127.0.0.1:1/hook\n    secrets: [" + secrets["webhook"] + "]\n",
		importFile:   `{"id":1,"name":"a"}` + "\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PLANTSTORE_TOKEN", secrets["env"])
	t.Setenv("PLANTSTORE_TOKENS", secrets["tokens"])
	t.Setenv("PLANTSTORE_WEBHOOKS_FILE", webhooksFile)

	var runs [][]string
	client := map[string][]string{ // a command and a valid argument list
		"plants create": {"1", "--name", "a"},
		"plants get":    {"1"},
		"plants list":   {},
		"plants update": {"1", "--name", "b"},
		"plants delete": {"1"},
		"export":        {"-f", filepath.Join(dir, "backup.ndjson")},
		"import":        {"-f", importFile},
	}
	for cmd, valid := range client {
		words := strings.Fields(cmd)
		for _, token := range [][]string{{"--token", secrets["flag"]}, {"--token-file", tokenFile}, {}} {
			with := func(args ...string) []string {
				return append(append(append(append([]string{}, words...), args...), token...), "--url", s.API)
			}
			runs = append(runs,
				with("--help"),
				with(append([]string{"--bogus"}, valid...)...),
				with(append([]string{"extra-argument"}, valid...)...),
				with(valid...), // 401: the server knows none of these tokens
			)
		}
	}
	runs = append(runs,
		[]string{"--help"}, []string{"--bogus"}, []string{"help"}, []string{"help", "plants"},
		[]string{"plants"}, []string{"plants", "--help"}, []string{"plants", "grow"},
		[]string{"version"}, []string{"--version"},
		[]string{"completion", "bash"}, []string{"completion", "zsh"}, []string{"completion", "fish"},
		[]string{"healthcheck", "--help"}, []string{"healthcheck", "--bogus"},
		[]string{"migrate", "--help"}, []string{"migrate", "--bogus"},
		// A server that reads the tokens and the webhooks file, and refuses
		// the file's plain-http endpoint.
		[]string{"--store", "bolt", "--data-dir", filepath.Join(dir, "data"), "--http-addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"},
	)
	var unauthorized int
	for i, args := range runs {
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		if i == len(runs)-1 && (code != 2 || !strings.Contains(out, `endpoint 1 ("a"): url: plain http is refused`)) {
			t.Errorf("the server with the webhooks file = exit %d, %q; want 2 and the endpoint refused", code, out)
		}
		for source, secret := range secrets {
			if strings.Contains(out, secret) {
				t.Errorf("plantstore %s (exit %d) printed the %s secret:\n%s", strings.Join(args, " "), code, source, out)
			}
		}
		if strings.Contains(out, "401 Unauthorized") {
			unauthorized++
		}
	}
	// Each client command, with each of the three tokens, met a 401.
	if want := len(client) * 3; unauthorized != want {
		t.Errorf("%d runs were answered 401, want %d", unauthorized, want)
	}
}
