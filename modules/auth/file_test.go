package auth

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/auth/principal"
)

// reloadDeadline bounds how long a test waits for the watcher to pick up a
// change; the reload is asynchronous, so the tests poll for its effect.
const reloadDeadline = 10 * time.Second

func TestFileSourceLoadsAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "# comment\nfile-a\n\nfile-b\n")
	tokens := newTokenSet([]string{"static"})
	if _, err := newFileSource(path, tokens, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	assertValid(t, tokens, map[string]bool{"file-a": true, "file-b": true, "static": true, "# comment": false})
}

func TestFileSourceMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent")
	_, err := newFileSource(path, newTokenSet(nil), zap.NewNop())
	if err == nil || !strings.HasPrefix(err.Error(), "read tokens file: ") || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("newFileSource(missing) = %v, want a read error for the missing file", err)
	}
}

func TestFileSourceRotatesInPlace(t *testing.T) {
	const oldToken, newToken = "tok-old-7f3a9c", "tok-new-91c2e4"
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, oldToken+"\n")
	tokens, logs := startFileSource(t, path)

	writeFile(t, path, oldToken+"\n"+newToken+"\n") // both during the rollout
	waitFor(t, func() bool { return tokens.Valid(newToken) }, "the new token is accepted")
	assertValid(t, tokens, map[string]bool{oldToken: true})

	writeFile(t, path, newToken+"\n") // the old one retired
	waitFor(t, func() bool { return !tokens.Valid(oldToken) }, "the removed token is refused")
	assertValid(t, tokens, map[string]bool{newToken: true})

	// The reload logs after it swaps the tokens, so the line may trail
	// what the test has already seen.
	waitFor(t, func() bool { return logs.FilterMessage("tokens file reloaded").Len() >= 2 }, "both reloads are logged")
	for _, e := range logs.All() {
		line := e.Message + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, oldToken) || strings.Contains(line, newToken) {
			t.Fatalf("a log line shows a token: %s", line)
		}
	}
}

func TestFileSourceRotatesByRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	writeFile(t, path, "old\n")
	tokens, _ := startFileSource(t, path)

	// What editors and config tools do: write a temporary file, rename it
	// over the old one.
	tmp := filepath.Join(dir, ".tokens.tmp")
	writeFile(t, tmp, "new\n")
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return tokens.Valid("new") && !tokens.Valid("old") }, "the renamed file's tokens replace the old ones")
}

// TestFileSourceRotatesKubernetesSecret swaps tokens the way the kubelet
// updates a mounted Secret: the file is a symlink through "..data", itself
// a symlink to a timestamped directory, and an update writes a new
// directory and renames a new "..data" symlink over the old one.
func TestFileSourceRotatesKubernetesSecret(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "..2026_11_21_10_00_00.000000001", "tokens"), "old\n")
	symlink(t, "..2026_11_21_10_00_00.000000001", filepath.Join(dir, "..data"))
	symlink(t, filepath.Join("..data", "tokens"), filepath.Join(dir, "tokens"))
	tokens, _ := startFileSource(t, filepath.Join(dir, "tokens"))
	assertValid(t, tokens, map[string]bool{"old": true, "new": false})

	writeFile(t, filepath.Join(dir, "..2026_11_21_11_00_00.000000002", "tokens"), "new\n")
	symlink(t, "..2026_11_21_11_00_00.000000002", filepath.Join(dir, "..data_tmp"))
	if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "..2026_11_21_10_00_00.000000001")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return tokens.Valid("new") && !tokens.Valid("old") }, "the swapped Secret's tokens replace the old ones")
}

// TestFileSourceKeepsTokensWhileFileIsGone: mid-rotation the file may be
// briefly absent, or empty between a truncate and a write. Neither may
// lock every client out.
func TestFileSourceKeepsTokensWhileFileIsGone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "current\n")
	core, logs := observer.New(zap.DebugLevel)
	tokens := newTokenSet(nil)
	src, err := newFileSource(path, tokens, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}

	// reload is what the watcher calls on every change; calling it directly
	// makes each step deterministic.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	src.reload()
	assertValid(t, tokens, map[string]bool{"current": true})

	writeFile(t, path, "")
	src.reload()
	assertValid(t, tokens, map[string]bool{"current": true})

	writeFile(t, path, "# all commented out\n\n")
	src.reload()
	assertValid(t, tokens, map[string]bool{"current": true})

	if n := logs.FilterMessage("tokens file not reloaded; keeping the current tokens").Len(); n != 3 {
		t.Fatalf("logged %d warnings, want 3: %v", n, logs.All())
	}

	writeFile(t, path, "next\n")
	src.reload()
	assertValid(t, tokens, map[string]bool{"current": false, "next": true})
}

func TestFileSourceStop(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "a\n")
	src, err := newFileSource(path, newTokenSet(nil), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Start: %v", err)
	}
	if err := src.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := src.Stop(context.Background()); err != nil { // returns once the watch goroutine has ended
		t.Fatalf("Stop: %v", err)
	}
}

func startFileSource(t *testing.T, path string) (*tokenSet, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	tokens := newTokenSet(nil)
	src, err := newFileSource(path, tokens, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := src.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return tokens, logs
}

// waitFor polls cond every 10 ms until it holds, failing the test after
// reloadDeadline. The reload it waits for comes from the kernel's file
// events (inotify), which a synctest bubble cannot wait on.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	if err := poll.Until(context.Background(), 10*time.Millisecond, reloadDeadline, func() (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("not true that %s: %v", what, err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestFileSourceReloadsScopes: a reload changes a token's scopes, and a
// reload with a scope no operation knows keeps the tokens in force (a typo
// must not lock clients out, nor grant what was not meant).
func TestFileSourceReloadsScopes(t *testing.T) {
	const tok = "tok-scoped-3b7d10"
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, tok+" plants:read\n")
	tokens, logs := startFileSource(t, path)
	canWrite := func() bool {
		p, err := tokens.Authenticate(t.Context(), tok)
		return err == nil && p.Has(principal.ScopePlantsWrite)
	}
	if canWrite() {
		t.Fatal("a plants:read token holds plants:write")
	}

	writeFile(t, path, tok+" plants:read plants:write\n")
	waitFor(t, canWrite, "the token gains plants:write")

	writeFile(t, path, tok+" plants:read\n"+"other plants:wrtie\n")
	waitFor(t, func() bool {
		return logs.FilterMessage("tokens file not reloaded; keeping the current tokens").Len() > 0
	}, "the bad reload is refused")
	if !canWrite() || tokens.Valid("other") {
		t.Fatal("a refused reload changed the tokens")
	}
	for _, e := range logs.All() {
		if strings.Contains(e.Message+fmt.Sprint(e.ContextMap()), tok) {
			t.Fatalf("a log line shows a token: %s %v", e.Message, e.ContextMap())
		}
	}
}

func TestFileSourceRefusesUnknownScopeAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	writeFile(t, path, "tok plants:delete\n")
	_, err := newFileSource(path, newTokenSet(nil), zap.NewNop())
	if err == nil || err.Error() != `tokens file line 1: unknown scope "plants:delete" (known: plants:read, plants:write, webhooks:manage)` {
		t.Fatalf("newFileSource = %v", err)
	}
}
