package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/url"
	"runtime"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/buildinfo"
)

func TestVersionCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"version"}, &stdout, &stderr); code != 0 {
		t.Fatalf("version = %d; stderr %q", code, stderr.String())
	}
	out := stdout.String()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("version printed %q, want one line", out)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("version printed %q: %v", out, err)
	}
	info := buildinfo.Get()
	want := map[string]string{"version": info.Version, "revision": info.Revision, "goVersion": runtime.Version()}
	if len(got) != len(want) {
		t.Fatalf("version = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v || v == "" {
			t.Fatalf("version[%q] = %q, want %q", k, got[k], v)
		}
	}
}

func TestHealthcheckCommand(t *testing.T) {
	clearEnv(t)
	s := startServer(t, testConfig(t))
	admin, err := url.Parse(s.Admin)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(admin.Host)

	healthcheck := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"healthcheck"}, args...), &stdout, &stderr)
		if stdout.Len() != 0 {
			t.Fatalf("healthcheck %q wrote to stdout: %q", args, stdout.String())
		}
		return code, stderr.String()
	}

	// Ready: exit 0, silently, however the address is given.
	for _, args := range [][]string{
		{"--admin-addr", admin.Host},
		{"--admin-addr=:" + port}, // no host: the local machine
		{"--admin-addr=0.0.0.0:" + port},
	} {
		if code, stderr := healthcheck(args...); code != 0 || stderr != "" {
			t.Fatalf("healthcheck %q on a ready server = %d %q, want 0", args, code, stderr)
		}
	}
	t.Setenv("PLANTSTORE_ADMIN_ADDR", ":"+port) // the server's own setting, as in the image
	if code, stderr := healthcheck(); code != 0 {
		t.Fatalf("healthcheck with PLANTSTORE_ADMIN_ADDR = %d %q, want 0", code, stderr)
	}

	// Not ready (the server is draining): exit 1 with the reason.
	s.Ready.Drain()
	if code, stderr := healthcheck(); code != 1 || stderr != "plantstore healthcheck: not ready (503 Service Unavailable)\n" {
		t.Fatalf("healthcheck on a draining server = %d %q, want 1 and the status", code, stderr)
	}

	// Nothing listening: exit 1.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	if code, stderr := healthcheck("--admin-addr", closed); code != 1 || !strings.HasPrefix(stderr, "plantstore healthcheck: ") || !strings.Contains(stderr, "connection refused") {
		t.Fatalf("healthcheck on a closed port = %d %q, want 1 and the error", code, stderr)
	}

	// A bad address or flag is a usage error: exit 2.
	if code, stderr := healthcheck("--admin-addr", "9090"); code != 2 || stderr != "plantstore healthcheck: --admin-addr \"9090\": want host:port\n" {
		t.Fatalf("healthcheck with a bad address = %d %q, want 2", code, stderr)
	}
	if code, _ := healthcheck("--colour"); code != 2 {
		t.Fatalf("healthcheck with an unknown flag = %d, want 2", code)
	}
}
