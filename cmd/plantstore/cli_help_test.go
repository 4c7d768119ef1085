package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runArgs runs the binary's run with args and returns its exit code,
// stdout and stderr.
func runArgs(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestCLIHelpAndVersion: plantstore --help names every command; help,
// --version and each command's --help exit 0 with their text on stdout;
// an error names its command once, without the client's own prefix.
func TestCLIHelpAndVersion(t *testing.T) {
	clearEnv(t)
	code, usage, stderr := runArgs("--help")
	if code != 0 || stderr != "" || !strings.HasPrefix(usage, "usage: plantstore [flags]\n") {
		t.Fatalf("--help = exit %d, stderr %q, stdout starting %.60q", code, stderr, usage)
	}
	for _, want := range []string{
		"\n  plantstore plants create|get|list|update|delete|watch ...\n",
		"\n  plantstore export [-f FILE] ", "\n  plantstore import [-f FILE] ",
		"\n  plantstore migrate [flags] ", "\n  plantstore healthcheck [flags] ",
		"\n  plantstore version | --version ", "\n  plantstore completion bash|zsh ",
		"\n  plantstore help [COMMAND] ", "  -http-addr string\n",
	} {
		if !strings.Contains(usage, want) {
			t.Errorf("--help lacks %q:\n%s", want, usage)
		}
	}
	if code, out, stderr := runArgs("help"); code != 0 || out != usage || stderr != "" {
		t.Errorf("help = exit %d, stderr %q, and not --help's text:\n%s", code, stderr, out)
	}
	_, version, _ := runArgs("version")
	if code, out, stderr := runArgs("--version"); code != 0 || out != version || stderr != "" {
		t.Errorf("--version = exit %d, %q, stderr %q; want 0 and %q", code, out, stderr, version)
	}

	for _, tc := range []struct {
		args []string
		want []string // in stdout
	}{
		{[]string{"plants", "--help"}, []string{"usage: plantstore plants create|get|list|update|delete|watch [flags]\n",
			"  plantstore plants create ID --name NAME [--tag TAG] [flags]\n",
			"  plantstore plants update ID --name NAME [--tag TAG | --no-tag] [--if-match ETAG] [flags]\n      Renames a plant; its tag is kept unless --tag or --no-tag says otherwise.\n"}},
		{[]string{"help", "plants"}, []string{"usage: plantstore plants create|get|list|update|delete|watch [flags]\n"}},
		{[]string{"plants", "watch", "--help"}, []string{"usage: plantstore plants watch [--after CURSOR | --snapshot] [--wait 30s] [--tag TAG] [--types TYPE,...] [flags]\n", "  -after string\n", "  -snapshot\n", "  -tag string\n", "  -types string\n", "  -wait duration\n"}},
		{[]string{"plants", "update", "--help"}, []string{"usage: plantstore plants update ID --name NAME [--tag TAG | --no-tag] [--if-match ETAG] [flags]\n", "  -no-tag\n"}},
		{[]string{"export", "--help"}, []string{"usage: plantstore export [-f FILE] [flags]\n", "  -f string\n"}},
		{[]string{"help", "import"}, []string{"usage: plantstore import [-f FILE] ", "  -on-conflict string\n"}},
		{[]string{"help", "webhooks"}, []string{"usage: plantstore webhooks list|create|rotate|delete|attempts|message|redeliver [flags]\n", "plantstore webhooks VERB --help"}},
		{[]string{"help", "webhooks", "attempts"}, []string{"usage: plantstore webhooks attempts ENDPOINT ", "  -status string\n"}},
		{[]string{"webhooks", "redeliver", "--help"}, []string{"usage: plantstore webhooks redeliver WEBHOOK-ID ", "  -token string\n"}},
		{[]string{"healthcheck", "--help"}, []string{"usage: plantstore healthcheck [--admin-addr HOST:PORT]\n", "  -admin-addr string\n"}},
		{[]string{"help", "migrate"}, []string{"usage: plantstore migrate [flags]\n"}},
		{[]string{"help", "completion"}, []string{"usage: plantstore completion bash|zsh\n"}},
	} {
		code, out, stderr := runArgs(tc.args...)
		if code != 0 || stderr != "" {
			t.Errorf("plantstore %s = exit %d, stderr %q; want 0", strings.Join(tc.args, " "), code, stderr)
		}
		for _, want := range tc.want {
			if !strings.Contains(out, want) {
				t.Errorf("plantstore %s lacks %q:\n%s", strings.Join(tc.args, " "), want, out)
			}
		}
	}

	// Mistakes: one line on stderr, exit 2.
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"export", "--bogus"}, "plantstore export: unknown flag --bogus (see plantstore export --help)\n"},
		{[]string{"plants", "get", "--url"}, "plantstore plants get: --url needs a value (see plantstore plants get --help)\n"},
		{[]string{"help", "grow"}, "plantstore help: unknown command \"grow\" (see plantstore --help)\n"},
		{[]string{"completion", "fish"}, "plantstore completion: want one shell: bash or zsh (see plantstore completion --help)\n"},
	} {
		if code, out, stderr := runArgs(tc.args...); code != 2 || out != "" || stderr != tc.stderr {
			t.Errorf("plantstore %s = exit %d, stdout %q, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, out, stderr, tc.stderr)
		}
	}

	// The server's answers name the command once.
	s := startServer(t, testConfig(t))
	wantCLI(t, s, 1, "", "plantstore plants update: 404 Not Found: plant 9 not found\n", "plants", "update", "9", "--name", "x")
	wantCLI(t, s, 1, "", "plantstore plants delete: 404 Not Found: plant 9 not found\n", "plants", "delete", "9")
}

// TestCLICompletion: plantstore completion bash prints a script bash
// accepts, which completes commands, verbs and flags; the zsh script is
// one zsh autoloads (#compdef), and zsh accepts it where zsh is installed.
func TestCLICompletion(t *testing.T) {
	clearEnv(t)
	bash := requireProgram(t, "bash", "apt-get install bash")
	code, script, stderr := runArgs("completion", "bash")
	if code != 0 || stderr != "" {
		t.Fatalf("completion bash = exit %d, stderr %q", code, stderr)
	}
	file := filepath.Join(t.TempDir(), "plantstore.bash")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", file).CombinedOutput(); err != nil {
		t.Fatalf("bash -n rejects the script: %v\n%s", err, out)
	}
	// What the script offers after a command line: COMP_WORDS as bash
	// sets them when <Tab> is pressed at the end of the last word.
	for line, want := range map[string]string{
		"plantstore ":                        "completion export healthcheck help import migrate plants version webhooks",
		"plantstore webhooks ":               "attempts create delete help list message redeliver rotate",
		"plantstore webhooks attempts --s":   "--status",
		"plantstore pl":                      "plants",
		"plantstore plants ":                 "create delete get help list update watch",
		"plantstore plants watch --":         "--after --snapshot --tag --token --token-file --types --url --wait",
		"plantstore plants update 1 --n":     "--name --no-tag",
		"plantstore plants create 1 --name":  "--name",
		"plantstore export -":                "--token --token-file --url -f",
		"plantstore import --on":             "--on-conflict",
		"plantstore completion ":             "bash zsh",
		"plantstore --store memory --http-a": "--http-addr",
	} {
		words := strings.Split(line, " ")
		cmd := exec.Command(bash, "-c", `source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _plantstore; printf '%s\n' "${COMPREPLY[@]}" | sort | paste -sd ' '`,
			"bash", file)
		cmd.Args = append(cmd.Args, words...)
		out, err := cmd.CombinedOutput()
		if got := strings.TrimSpace(string(out)); err != nil || got != want {
			t.Errorf("completing %q offers %q (%v), want %q", line, got, err, want)
		}
	}

	code, script, stderr = runArgs("completion", "zsh")
	if code != 0 || stderr != "" || !strings.HasPrefix(script, "#compdef plantstore\n") {
		t.Fatalf("completion zsh = exit %d, stderr %q, script starting %.40q; want #compdef plantstore first", code, stderr, script)
	}
	if zsh, err := exec.LookPath("zsh"); err == nil {
		file := filepath.Join(t.TempDir(), "_plantstore")
		if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(zsh, "-n", file).CombinedOutput(); err != nil {
			t.Fatalf("zsh -n rejects the script: %v\n%s", err, out)
		}
	}
}
