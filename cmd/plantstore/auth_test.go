package main

// Black-box tests of bearer authentication on the API listener.

import (
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	challenge        = `Bearer realm="plantstore"`
	invalidChallenge = `Bearer realm="plantstore", error="invalid_token"`
	tokenRequired    = "a bearer token is required: send Authorization: Bearer <token>"
)

func TestAuth(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	for i, tc := range []struct {
		name          string
		authorization string // "" sends no header
		contentType   string
		body          string
		status        int
		challenge     string // WWW-Authenticate on a 401
		message       string
	}{
		{name: "no header", status: 401, challenge: challenge, message: tokenRequired},
		{name: "basic", authorization: "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+testToken)),
			status: 401, challenge: challenge, message: "the Authorization header must use the Bearer scheme"},
		{name: "token without scheme", authorization: testToken,
			status: 401, challenge: challenge, message: "the Authorization header must use the Bearer scheme"},
		{name: "bearer with no token", authorization: "Bearer", status: 401, challenge: challenge, message: tokenRequired},
		{name: "bearer with blank token", authorization: "Bearer   ", status: 401, challenge: challenge, message: tokenRequired},
		{name: "wrong token", authorization: "Bearer wrong-token", status: 401, challenge: invalidChallenge, message: "the bearer token is not valid"},
		{name: "token prefix", authorization: "Bearer " + testToken[:len(testToken)-1], status: 401, challenge: invalidChallenge, message: "the bearer token is not valid"},
		{name: "token in other case", authorization: "Bearer " + strings.ToUpper(testToken), status: 401, challenge: invalidChallenge, message: "the bearer token is not valid"},
		{name: "valid", authorization: "Bearer " + testToken, status: 200},
		{name: "scheme in lower case", authorization: "bearer " + testToken, status: 200},
		{name: "scheme in upper case", authorization: "BEARER " + testToken, status: 200},
		// Credentials are checked before anything else is looked at.
		{name: "unauthenticated with a bad body", body: `{"id":`, status: 401, challenge: challenge, message: tokenRequired},
		{name: "wrong token with a bad body", authorization: "Bearer nope", body: `[]`, status: 401, challenge: invalidChallenge, message: "the bearer token is not valid"},
		{name: "unauthenticated with a bad Content-Type", contentType: "text/plain", status: 401, challenge: challenge, message: tokenRequired},
		{name: "unauthenticated with a huge body", body: `{"id":1,"name":"` + strings.Repeat("x", 2<<20) + `"}`, status: 401, challenge: challenge, message: tokenRequired},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if body == "" {
				body = `{"id":` + strconv.Itoa(100+i) + `,"name":"a"}`
			}
			contentType := tc.contentType
			if contentType == "" {
				contentType = "application/json"
			}
			req := s.request(t, http.MethodPost, "/plants", "", contentType, []byte(body))
			if tc.authorization != "" {
				req.Header.Set("Authorization", tc.authorization)
			}
			r := s.do(t, req)
			if tc.status == http.StatusOK {
				if r.Status != http.StatusOK || r.Header.Get("WWW-Authenticate") != "" {
					t.Fatalf("answer %d %s (WWW-Authenticate %q), want 200", r.Status, r.Body, r.Header.Get("WWW-Authenticate"))
				}
				return
			}
			assertErrorMessage(t, r, tc.status, tc.message)
			if got := r.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != tc.challenge {
				t.Fatalf("WWW-Authenticate = %q, want %q", got, tc.challenge)
			}
		})
	}
}

// TestAuthOnEveryPath: unknown paths and methods need credentials too, so
// an anonymous client cannot map the API.
func TestAuthOnEveryPath(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/nope"},
		{http.MethodPut, "/plants"},
		{http.MethodPost, "/plants/1/leaves"},
	} {
		r := s.do(t, s.request(t, tc.method, tc.path, "", "application/json", nil))
		assertErrorMessage(t, r, http.StatusUnauthorized, tokenRequired)
		if got := r.Header.Get("WWW-Authenticate"); got != challenge {
			t.Fatalf("%s %s: WWW-Authenticate = %q", tc.method, tc.path, got)
		}
	}
}

// TestTokenRotation rotates tokens through the tokens file of a running
// server: the new token is accepted and the removed one refused, with no
// restart.
func TestTokenRotation(t *testing.T) {
	t.Parallel()
	// The rotations run at the same time, each with a directory and a
	// server of its own: each waits out the file watch's quiet time twice.
	var rotations sync.WaitGroup
	for _, rotation := range []struct {
		name  string
		setUp func(t *testing.T, dir string, tokens string) (path string) // writes the first tokens, returns the file to configure
		swap  func(t *testing.T, dir string, tokens string)               // replaces the tokens
	}{
		{name: "file rewritten in place", setUp: writeTokensInPlace, swap: func(t *testing.T, dir, tokens string) { writeTokensInPlace(t, dir, tokens) }},
		{name: "file renamed over", setUp: writeTokensInPlace, swap: renameTokens},
		{name: "Kubernetes Secret symlink swap", setUp: setUpSecretVolume, swap: swapSecretVolume},
	} {
		rotations.Go(func() {
			t.Run(rotation.name, func(t *testing.T) {
				const oldToken, newToken = "rotate-old-5a1f0c", "rotate-new-c2b98e"
				dir := t.TempDir()
				cfg := testConfig(t)
				cfg.Auth.Tokens = nil // only the file's tokens
				cfg.Auth.TokensFile = rotation.setUp(t, dir, "# issued 2026-11-01\n"+oldToken+"\n")
				s := startServer(t, cfg)

				nextID := 0
				status := func(token string) int {
					nextID++
					return s.do(t, s.request(t, http.MethodPost, "/plants", token, "application/json", []byte(`{"id":`+strconv.Itoa(nextID)+`,"name":"a"}`))).Status
				}
				if got := status(oldToken); got != http.StatusOK {
					t.Fatalf("old token before rotation: %d", got)
				}
				if got := status(newToken); got != http.StatusUnauthorized {
					t.Fatalf("new token before rotation: %d", got)
				}

				// The rollout: both tokens valid.
				rotation.swap(t, dir, oldToken+"\n"+newToken+"\n")
				eventually(t, 10*time.Second, "the new token is accepted", func() bool { return status(newToken) == http.StatusOK })
				if got := status(oldToken); got != http.StatusOK {
					t.Fatalf("old token during the rollout: %d", got)
				}

				// The old token retired.
				rotation.swap(t, dir, newToken+"\n")
				eventually(t, 10*time.Second, "the removed token is refused", func() bool { return status(oldToken) == http.StatusUnauthorized })
				if got := status(newToken); got != http.StatusOK {
					t.Fatalf("new token after rotation: %d", got)
				}
				r := s.do(t, s.request(t, http.MethodPost, "/plants", oldToken, "application/json", []byte(`{"id":0,"name":"a"}`)))
				assertErrorMessage(t, r, http.StatusUnauthorized, "the bearer token is not valid")
				if got := r.Header.Get("WWW-Authenticate"); got != invalidChallenge {
					t.Fatalf("WWW-Authenticate = %q", got)
				}
			})
		})
	}
	rotations.Wait()
}

func writeTokensInPlace(t *testing.T, dir, tokens string) string {
	t.Helper()
	path := filepath.Join(dir, "tokens")
	if err := os.WriteFile(path, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func renameTokens(t *testing.T, dir, tokens string) {
	t.Helper()
	tmp := filepath.Join(dir, "tokens.tmp")
	if err := os.WriteFile(tmp, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "tokens")); err != nil {
		t.Fatal(err)
	}
}

// setUpSecretVolume lays out dir as the kubelet mounts a Secret: "tokens"
// links to "..data/tokens", and "..data" links to a timestamped directory.
func setUpSecretVolume(t *testing.T, dir, tokens string) string {
	t.Helper()
	writeSecretVersion(t, dir, tokens)
	if err := os.Symlink(filepath.Join("..data", "tokens"), filepath.Join(dir, "tokens")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "tokens")
}

// swapSecretVolume updates the Secret as the kubelet does: a new
// timestamped directory, a "..data_tmp" link to it renamed over "..data"
// (atomic), then the old directory removed.
func swapSecretVolume(t *testing.T, dir, tokens string) {
	t.Helper()
	old, err := os.Readlink(filepath.Join(dir, "..data"))
	if err != nil {
		t.Fatal(err)
	}
	writeSecretVersion(t, dir, tokens)
	if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
		t.Fatal(err)
	}
}

func writeSecretVersion(t *testing.T, dir, tokens string) {
	t.Helper()
	version := time.Now().UTC().Format("..2006_01_02_15_04_05.000000000")
	if err := os.Mkdir(filepath.Join(dir, version), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, version, "tokens"), []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(version, filepath.Join(dir, "..data_tmp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// TestTokensNeverInOutput runs the real binary at debug level, sends
// requests with valid, invalid and malformed credentials, and checks that
// no credential appears anywhere in what the process wrote.
func TestTokensNeverInOutput(t *testing.T) {
	const fileToken, wrongToken = "file-token-6d2c77e1", "wrong-token-0b9fa3d4"
	tokensFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokensFile, []byte(fileToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "PLANTSTORE_LOG_LEVEL=debug", "PLANTSTORE_TOKENS_FILE="+tokensFile)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+wrongToken))
	client := &http.Client{Timeout: 10 * time.Second}
	for i, tc := range []struct {
		authorization string
		status        int
	}{
		{"Bearer " + testToken, 200},
		{"bearer " + fileToken, 200},
		{"Bearer " + wrongToken, 401},
		{basic, 401},
		{wrongToken, 401},
	} {
		req, err := http.NewRequest(http.MethodPost, p.API+"/plants", strings.NewReader(`{"id":`+strconv.Itoa(i)+`,"name":"a"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", tc.authorization)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Fatalf("request %d: %d, want %d", i, resp.StatusCode, tc.status)
		}
	}
	// Rotate once, so the reload is logged too.
	if err := os.WriteFile(tokensFile, []byte(fileToken+"\n"+wrongToken+"x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the tokens file reload is logged", func() bool {
		return strings.Contains(p.Output(), "tokens file reloaded")
	})
	if code := p.Signal(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.Output())
	}

	out := p.Output()
	// The output is the real thing: debug lines and one access line per request.
	if !strings.Contains(out, `"level":"debug"`) || strings.Count(out, `"msg":"request"`) != 5 {
		t.Fatalf("expected debug lines and 5 access-log lines in the output:\n%s", out)
	}
	for _, secret := range []string{testToken, fileToken, wrongToken, strings.TrimPrefix(basic, "Basic ")} {
		if strings.Contains(out, secret) {
			t.Fatalf("the output contains the credential %q:\n%s", secret, out)
		}
	}
	if strings.Contains(strings.ToLower(out), "authorization") {
		t.Fatalf("the output mentions the Authorization header:\n%s", out)
	}
}
