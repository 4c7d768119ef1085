package main

// The bolt store through the whole program: data survives a restart, and
// a data dir the store cannot use stops the program at start with one line
// on stderr and exit code 2.

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

func init() {
	testStores[plants.StoreBolt] = func(t *testing.T, cfg *config) {
		cfg.Plants.Store, cfg.Plants.Bolt.DataDir = plants.StoreBolt, t.TempDir()
	}
}

// boltConfig is a testConfig on the bolt store in dir.
func boltConfig(t *testing.T, dir string) config {
	t.Helper()
	cfg := testConfig(t)
	cfg.Plants.Store, cfg.Plants.Bolt.DataDir = plants.StoreBolt, dir
	return cfg
}

func TestBoltKeepsPlantsAcrossRestarts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, boltConfig(t, dir))
	for _, body := range []string{`{"id":1,"name":"Monstera","tag":"tropical"}`, `{"id":-2,"name":"Fern"}`, `{"id":3,"name":"","tag":""}`} {
		if r := s.post(t, body); r.Status != http.StatusOK {
			t.Fatalf("POST %s = %d %s", body, r.Status, r.Body)
		}
	}
	stopServer(t, s)

	s = startServer(t, boltConfig(t, dir))
	for body, want := range map[string]int{
		`{"id":1,"name":"Monstera","tag":"tropical"}`: http.StatusOK, // identical retry
		`{"id":-2,"name":"Fern"}`:                     http.StatusOK,
		`{"id":3,"name":"","tag":""}`:                 http.StatusOK,
		`{"id":1,"name":"Monstera"}`:                  http.StatusConflict, // stored with a tag
		`{"id":-2,"name":"Fern","tag":"x"}`:           http.StatusConflict, // stored without one
		`{"id":3,"name":""}`:                          http.StatusConflict, // empty tag is a tag
	} {
		r := s.post(t, body)
		if want == http.StatusOK && r.Status != want {
			t.Errorf("after restart POST %s = %d %s, want 200", body, r.Status, r.Body)
		}
		if want == http.StatusConflict {
			assertError(t, r, want)
		}
	}
}

// On bolt the scrape has the group commit's series, counting the
// program's own writes, and passes promtool: two creates one after the
// other are two commits of one write each, and an identical retry,
// answered from a read, is none.
func TestBoltGroupCommitMetrics(t *testing.T) {
	t.Parallel()
	promtool := requireProgram(t, "promtool", "apt-get install prometheus")
	s := startServer(t, boltConfig(t, t.TempDir()))
	for _, body := range []string{`{"id":1,"name":"Monstera"}`, `{"id":2,"name":"Fern"}`, `{"id":1,"name":"Monstera"}`} {
		if r := s.post(t, body); r.Status != http.StatusOK {
			t.Fatalf("POST %s = %d %s", body, r.Status, r.Body)
		}
	}
	text := scrape(t, s, false)
	for _, series := range []string{
		"plantstore_bolt_commits_total 2",
		"plantstore_bolt_writes_committed_total 2",
	} {
		if !slices.Contains(strings.Split(text, "\n"), series) {
			t.Errorf("the scrape has no line %q; its bolt series:\n%s", series, grepLines(text, "plantstore_bolt"))
		}
	}
	checkMetrics(t, promtool, text)
}

// stopServer stops an in-process app before the test ends (its cleanup
// then finds it stopped).
func stopServer(t *testing.T, s *testServer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.app.Stop(ctx); err != nil {
		t.Fatalf("stop app: %v", err)
	}
}

// runToExit runs the binary bin as the user cred (nil: the tests' user)
// with env added to a minimal environment, and returns its exit code and
// stderr, failing if it does not exit by itself.
func runToExit(t *testing.T, bin string, cred *syscall.Credential, env ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"PLANTSTORE_HTTP_ADDR=127.0.0.1:0",
		"PLANTSTORE_ADMIN_ADDR=127.0.0.1:0",
		"PLANTSTORE_TOKENS=" + testToken,
	}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited: //nolint:errcheck // a non-zero exit is what the caller checks, through the exit code
		return cmd.ProcessState.ExitCode(), stderr.String()
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited //nolint:errcheck // killed: its exit error is expected
		t.Fatalf("plantstore did not exit within 30s; stderr:\n%s", stderr.String())
		return -1, ""
	}
}

// assertStartFailure checks the program stopped with code 2 and exactly
// one stderr line that starts with want.
func assertStartFailure(t *testing.T, code int, stderr, want string) {
	t.Helper()
	if code != 2 || !strings.HasPrefix(stderr, want) || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Fatalf("exit %d, stderr %q; want exit 2 and one line starting %q", code, stderr, want)
	}
}

func TestBoltSecondProcessOnSameDataDirFails(t *testing.T) {
	dir := t.TempDir()
	first := startProcess(t, "PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR="+dir)
	code, stderr := runToExit(t, buildBinary(t), nil, "PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR="+dir)
	assertStartFailure(t, code, stderr,
		`plantstore: bolt store: data dir "`+dir+`" is in use by another plantstore process (plants.db is locked)`)
	// The first process is untouched and keeps serving.
	if status, err := postPlant(http.DefaultClient, first.API, plant.Plant{ID: 1, Name: "p"}); err != nil || status != http.StatusOK {
		t.Fatalf("first process answered %d, %v after the second one failed", status, err)
	}
	if code := first.Signal(t, syscall.SIGTERM, 30*time.Second); code != 0 {
		t.Fatalf("first process exit code = %d\n%s", code, first.Output())
	}
}

func TestBoltCorruptFileStopsStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, boltstore.FileName)
	if err := os.WriteFile(path, bytes.Repeat([]byte("not bolt"), 8192), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr := runToExit(t, buildBinary(t), nil, "PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR="+dir)
	assertStartFailure(t, code, stderr,
		"plantstore: bolt store: "+path+" is not a readable plant store (corrupt, or not a plantstore file): invalid database;")
}

func TestBoltDataDirUnderAFileStopsStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code, stderr := runToExit(t, buildBinary(t), nil, "PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR="+file+"/data")
	assertStartFailure(t, code, stderr, `plantstore: bolt store: cannot create data dir "`+file+`/data": mkdir: not a directory`)
}

// TestBoltUnwritableDataDirStopsStart runs the program as a user who may not
// write the data dir: the tests' own user after a chmod, or, when the tests
// run as root (who may write anywhere), the unprivileged user nobody.
func TestBoltUnwritableDataDirStopsStart(t *testing.T) {
	// A world-readable place, so that nobody can reach the binary and the
	// data dir (t.TempDir's parent is private to the test's user).
	base, err := os.MkdirTemp("", "plantstore-unwritable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	dir := filepath.Join(base, "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{base, dir} {
		if err := os.Chmod(p, 0o755); err != nil { // whatever the umask
			t.Fatal(err)
		}
	}
	var cred *syscall.Credential
	bin := buildBinary(t)
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534} // nobody, nogroup
		copied := filepath.Join(base, "plantstore")
		if err := copyFile(bin, copied, 0o755); err != nil {
			t.Fatal(err)
		}
		bin = copied
	} else if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	code, stderr := runToExit(t, bin, cred, "PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR="+dir)
	assertStartFailure(t, code, stderr,
		`plantstore: bolt store: data dir "`+dir+`" is not writable: open: permission denied`)
}

func copyFile(from, to string, mode os.FileMode) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, mode)
}
