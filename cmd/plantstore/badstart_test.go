package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBadStartIsOneLine runs the real binary with a mistake a first-time
// user makes: whatever it is, the program says so in exactly one line on
// stderr, writes nothing on stdout (no usage, no JSON from Fx) and exits 2.
func TestBadStartIsOneLine(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	busy := taken.Addr().String()
	closed := closedLoopbackAddr(t)
	hooks := filepath.Join(t.TempDir(), "webhooks.yaml")
	if err := os.WriteFile(hooks, []byte("endpoints: [{name: crm, url: \"http://crm.example/in\", secrets: [whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	misspelt := filepath.Join(t.TempDir(), "webhooks.yaml")
	if err := os.WriteFile(misspelt, []byte("endpoints:\n  - name: audit\n    url: https://audit.example/in\n    secrets: [whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw]\n"+
		"  - name: crm\n    url: https://crm.example/in\n    secret: [whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw]\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		args   []string
		env    []string
		stderr string // the whole line, or its start when prefix is set
		prefix bool
	}{
		{name: "bad duration", args: []string{"--drain-delay", "5"},
			stderr: `plantstore: --drain-delay "5": want a duration such as 5s, 250ms or 1m30s (see plantstore --help)`},
		{name: "bad duration from env", env: []string{"PLANTSTORE_SHUTDOWN_TIMEOUT=20"},
			stderr: `plantstore: PLANTSTORE_SHUTDOWN_TIMEOUT "20": want a duration such as 5s, 250ms or 1m30s (see plantstore --help)`},
		{name: "unknown flag", args: []string{"--colour=green"},
			stderr: `plantstore: unknown flag --colour (see plantstore --help)`},
		{name: "bad int", args: []string{"--max-body-bytes=1MiB"},
			stderr: `plantstore: --max-body-bytes "1MiB": want a whole number such as 16 (see plantstore --help)`},
		{name: "bad bool", args: []string{"--pprof=yes"},
			stderr: `plantstore: --pprof "yes": want true or false (see plantstore --help)`},
		{name: "missing value", args: []string{"--store"},
			stderr: `plantstore: --store needs a value (see plantstore --help)`},
		{name: "API port in use", args: []string{"--http-addr", busy},
			stderr: "plantstore: api listener --http-addr " + busy + ": address already in use"},
		{name: "admin port in use", args: []string{"--admin-addr", busy},
			stderr: "plantstore: admin listener --admin-addr " + busy + ": address already in use"},
		{name: "postgres unreachable", args: []string{"--store=postgres",
			"--postgres-url=postgres://plantstore@" + closed + "/plantstore?sslmode=disable", "--postgres-connect-timeout=2s"},
			stderr: "plantstore: postgres: migrate (--postgres-url): failed to connect to `user=plantstore database=plantstore`: " + closed, prefix: true},
		{name: "changes retention too short", args: []string{"--changes-retention=30s"},
			stderr: `plantstore: --changes-retention 30s: must be at least 1m0s, or 0 to keep every change (see plantstore --help)`},
		{name: "changes retention too short, from env", env: []string{"PLANTSTORE_CHANGES_RETENTION=1s"},
			stderr: `plantstore: PLANTSTORE_CHANGES_RETENTION 1s: must be at least 1m0s, or 0 to keep every change (see plantstore --help)`},
		{name: "bad value from env", env: []string{"PLANTSTORE_STORE=sqlite"},
			stderr: `plantstore: PLANTSTORE_STORE "sqlite": want memory, bolt or postgres (see plantstore --help)`},
		{name: "API port in use, from env", env: []string{"PLANTSTORE_HTTP_ADDR=" + busy},
			stderr: "plantstore: api listener PLANTSTORE_HTTP_ADDR " + busy + ": address already in use"},
		// No URL and no PG* variable: libpq tries the local socket as the
		// current user, and its message alone names neither way to say
		// where the database is.
		{name: "postgres without a URL", args: []string{"--store=postgres", "--postgres-connect-timeout=2s"},
			stderr: "plantstore: --store postgres: no database given: set --postgres-url (PLANTSTORE_POSTGRES_URL) or libpq's PG* variables " +
				"(PGHOST, PGDATABASE, PGUSER, PGPASSWORD, ...); the default, the local socket, failed: failed to connect to `user=", prefix: true},
		{name: "webhooks file missing", args: []string{"--store=bolt", "--webhooks-file=/nonexistent/webhooks.yaml"},
			stderr: "plantstore: --webhooks-file: open /nonexistent/webhooks.yaml: no such file or directory"},
		{name: "webhooks file refused", args: []string{"--store=bolt", "--webhooks-file=" + hooks},
			stderr: "plantstore: --webhooks-file " + hooks + `: endpoint 1 ("crm"): url: plain http is refused (use https, or --webhooks-allow-http for development)`},
		{name: "webhooks file misspelt", args: []string{"--store=bolt", "--webhooks-file=" + misspelt},
			stderr: "plantstore: --webhooks-file " + misspelt + `: endpoint 2 ("crm"): unknown field "secret" (an endpoint has name, url, secrets, format and events)`},
		{name: "webhooks on the memory store", args: []string{"--store=memory", "--webhooks-file=" + hooks},
			stderr: "plantstore: --webhooks-file needs --store bolt or postgres: the memory store keeps no outbox (see plantstore --help)"},
		{name: "webhooks API on the memory store", args: []string{"--store=memory", "--webhooks-api"},
			stderr: "plantstore: --webhooks-api needs --store bolt or postgres: the memory store keeps no outbox (see plantstore --help)"},
		{name: "bad disable-after", args: []string{"--store=bolt", "--webhooks-disable-after=30s"},
			stderr: "plantstore: --webhooks-disable-after 30s: must be 0 (never) or at least 1m (see plantstore --help)"},
		{name: "bad retry schedule", args: []string{"--webhooks-retry-schedule=5s,soon"},
			stderr: `plantstore: --webhooks-retry-schedule "5s,soon": want positive durations separated by commas, such as 5s,5m,30m (see plantstore --help)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runBinary(t, tc.args, tc.env...)
			if code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
				t.Errorf("stderr is %d lines, want 1: %q", strings.Count(stderr, "\n"), stderr)
			}
			line := strings.TrimSuffix(stderr, "\n")
			if tc.prefix && !strings.HasPrefix(line, tc.stderr) || !tc.prefix && line != tc.stderr {
				t.Errorf("stderr\n got %q\nwant %q", line, tc.stderr)
			}
		})
	}
}

// closedLoopbackAddr is a loopback address nothing listens on: a port the
// kernel just handed out and took back.
func closedLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// runBinary runs the program to its exit with args, on the memory store and
// free loopback ports unless args or env say otherwise, and returns its exit
// code, stdout and stderr.
func runBinary(t *testing.T, args []string, env ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(buildBinary(t), args...)
	cmd.Env = childEnv(t, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }() // the exit code is what the caller checks
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("plantstore %q did not exit within 30s; stderr:\n%s", args, errOut.String())
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// TestBadStartUnreadableTokensFile: a tokens file its owner made 0600 (as
// docs/kubernetes.md's umask 077 does) cannot be read by the image's user,
// uid 65532. The one line says the file cannot be read, names the flag as
// it was set, and says which user the program runs as. As root the program
// runs as 65532, as in the image; otherwise the file is made unreadable.
func TestBadStartUnreadableTokensFile(t *testing.T) {
	// A directory every user may enter, with a copy of the binary in it
	// (the build's own directory is private to its user).
	dir, err := os.MkdirTemp("", "plantstore-uid-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(buildBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(dir, "plantstore")
	if err := os.WriteFile(binary, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.txt")
	if err := os.WriteFile(tokens, []byte("a-token-of-64-hex-digits\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	uid, gid := os.Geteuid(), os.Getegid()
	var runAs *syscall.SysProcAttr
	if uid == 0 {
		uid, gid = 65532, 65532
		runAs = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	} else if err := os.Chmod(tokens, 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, setting string
		args, env     []string
	}{
		{"flag", "--tokens-file", []string{"--tokens-file=" + tokens}, nil},
		{"env", "PLANTSTORE_TOKENS_FILE", nil, []string{"PLANTSTORE_TOKENS_FILE=" + tokens}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := exec.Command(binary, tc.args...)
			c.SysProcAttr = runAs
			c.Env = append([]string{"PATH=" + os.Getenv("PATH"), "PLANTSTORE_STORE=memory",
				"PLANTSTORE_HTTP_ADDR=127.0.0.1:0", "PLANTSTORE_ADMIN_ADDR=127.0.0.1:0"}, tc.env...)
			var stdout, stderr bytes.Buffer
			c.Stdout, c.Stderr = &stdout, &stderr
			err := c.Run()
			if code := c.ProcessState.ExitCode(); code != 2 {
				t.Fatalf("exit code %d (%v), want 2; stderr %q", code, err, stderr.String())
			}
			want := fmt.Sprintf("plantstore: %s %s: cannot read the file: permission denied "+
				"(plantstore runs as uid %d, gid %d: make the file readable by that user or group, e.g. chown %d or chgrp %d and chmod g+r)\n",
				tc.setting, tokens, uid, gid, uid, gid)
			if stderr.String() != want || stdout.Len() != 0 {
				t.Errorf("stdout %q, stderr\n got %q\nwant %q", stdout.String(), stderr.String(), want)
			}
		})
	}
}
