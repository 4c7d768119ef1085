package main

// `plantstore import` over the bulk create, against the real binary: a
// server killed with SIGKILL mid-import, and a CLI killed mid-import, then
// a second import; the store must equal the file, the second run's counts
// be exact, and every plant's webhook be delivered. And the per-plant path
// for a server without the bulk create.

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/gorilla/mux"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// The import's streams are NDJSON; the document validator reads them as
// the strings the document declares.
func init() {
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", openapi3filter.FileBodyDecoder)
}

// writeImportFile writes n plants as an export would (ascending ids, one
// per line), and returns its path, its content and the plants by id.
func writeImportFile(t *testing.T, n int) (string, string, map[int64]plant.Plant) {
	t.Helper()
	var b strings.Builder
	sent := make(map[int64]plant.Plant, n)
	for i := range n {
		p := plant.Plant{ID: int64(i*3 - n), Name: fmt.Sprintf("plant %d", i)}
		if i%3 != 0 {
			p.Tag = plant.StringPtr(fmt.Sprintf("t%d", i%7))
		}
		sent[p.ID] = p
		b.WriteString(plantJSON(p) + "\n")
	}
	path := filepath.Join(t.TempDir(), "plants.ndjson")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, b.String(), sent
}

// importCLI runs `plantstore import -f file` in-process against api.
func importCLI(api, file string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"import", "-f", file, "--url", api, "--token", testToken}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// storedCount counts the plants api holds, walking the list.
func storedCount(t *testing.T, api string) int {
	t.Helper()
	c, err := client.New(api, client.WithToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range c.All(context.Background(), client.ListOptions{Limit: 1000}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// checkStoreEqualsFile exports api's store and compares it byte for byte
// with the imported file.
func checkStoreEqualsFile(t *testing.T, api, content string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "export.ndjson")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"export", "-f", out, "--url", api, "--token", testToken}, &stdout, &stderr); code != 0 {
		t.Fatalf("export = exit %d: %s", code, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != content {
		t.Fatalf("the store is not the file: export has %d lines, the file %d",
			strings.Count(string(got), "\n"), strings.Count(content, "\n"))
	}
}

// waitCreated waits until the server has created at least n plants.
func waitCreated(t *testing.T, admin string, n int) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("%d plants created", n), func() bool {
		return adminMetric(t, admin, "plantstore_plants_created_total") >= float64(n)
	})
}

// wantCounts is the JSON line import prints.
func wantCounts(created, unchanged int) string {
	return fmt.Sprintf(`{"created":%d,"unchanged":%d,"skipped":0,"overwritten":0,"failed":0}`+"\n", created, unchanged)
}

// TestImportResumesAfterServerSIGKILL: the bolt server is killed with
// SIGKILL mid-import; the import fails (exit 1). Restarted on the same
// file, it holds some of the plants; a second import creates exactly the
// others and counts those as unchanged, the store then equals the file,
// and every plant's webhook reaches the receiver (its event was written
// in its create's commit, whichever run created it).
func TestImportResumesAfterServerSIGKILL(t *testing.T) {
	clearEnv(t)
	// Enough plants for several of bolt's import batches (thousands of
	// lines a commit) after the kill's point: fewer can be stored before
	// the kill lands.
	const n = 15_000
	file, content, sent := writeImportFile(t, n)
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	hooks := filepath.Join(t.TempDir(), "webhooks.yaml")
	writeWebhooksFile(t, hooks, secret, map[string]*webhookstest.Receiver{"crm": r})
	env := slices.Concat([]string{"PLANTSTORE_STORE=bolt", "PLANTSTORE_DATA_DIR=" + t.TempDir()}, webhookEnv(hooks))

	p := startProcess(t, env...)
	type result struct {
		code           int
		stdout, stderr string
	}
	first := make(chan result, 1)
	go func() {
		code, stdout, stderr := importCLI(p.API, file)
		first <- result{code, stdout, stderr}
	}()
	waitCreated(t, p.Admin, n/5)
	if err := p.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.Wait(t, 30*time.Second)
	res := <-first
	if res.code != 1 || !strings.HasPrefix(res.stderr, "plantstore import: ") {
		t.Fatalf("the import whose server was killed = exit %d, stderr %q; want exit 1 and the error", res.code, res.stderr)
	}

	p = startProcess(t, env...)
	stored := storedCount(t, p.API)
	if stored == 0 || stored == n {
		t.Fatalf("%d of %d plants stored after the kill: it was not mid-import", stored, n)
	}
	code, stdout, stderr := importCLI(p.API, file)
	if want := wantCounts(n-stored, stored); code != 0 || stdout != want || stderr != "" {
		t.Fatalf("second import = exit %d, stdout %q, stderr %q; want exit 0, stdout %q", code, stdout, stderr, want)
	}
	checkStoreEqualsFile(t, p.API, content)
	_, dups := waitForDeliveries(t, r, sent, sent, 90*time.Second)
	t.Logf("%d plants stored before the kill; %d duplicate deliveries", stored, dups)
}

// TestImportResumesAfterCLIKill: the CLI (a real child process) is killed
// with SIGKILL mid-import. Once the server has finished the creates it had
// in flight, a second import creates exactly the plants not stored and
// counts the others unchanged, and the store equals the file.
func TestImportResumesAfterCLIKill(t *testing.T) {
	clearEnv(t)
	// Enough plants for many import batches after the kill's point (see
	// TestImportResumesAfterServerSIGKILL).
	const n = 60_000
	file, content, _ := writeImportFile(t, n)
	p := startProcess(t)

	cli := exec.Command(buildBinary(t), "import", "-f", file, "--url", p.API, "--token", testToken)
	cli.Env = []string{"PATH=" + os.Getenv("PATH")}
	var cliErr bytes.Buffer
	cli.Stderr = &cliErr
	if err := cli.Start(); err != nil {
		t.Fatal(err)
	}
	waitCreated(t, p.Admin, n/5)
	if err := cli.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := cli.Wait(); err == nil {
		t.Fatalf("the killed import exited 0: it finished before the kill\n%s", cliErr.String())
	}
	// The import's handler returns once its creates in flight are done.
	eventually(t, 30*time.Second, "the server to finish the killed import", func() bool {
		return adminMetric(t, p.Admin, "plantstore_http_concurrent_requests") == 0
	})

	stored := storedCount(t, p.API)
	if stored == 0 || stored == n {
		t.Fatalf("%d of %d plants stored after the kill: it was not mid-import", stored, n)
	}
	code, stdout, stderr := importCLI(p.API, file)
	if want := wantCounts(n-stored, stored); code != 0 || stdout != want || stderr != "" {
		t.Fatalf("second import = exit %d, stdout %q, stderr %q; want exit 0, stdout %q", code, stdout, stderr, want)
	}
	checkStoreEqualsFile(t, p.API, content)
}

// TestImportFallsBackToOnePlantAtATime: a server without the bulk create
// (404 to it) gets one create a plant, with the same counts; the bulk path
// is not configured, it is detected.
func TestImportFallsBackToOnePlantAtATime(t *testing.T) {
	clearEnv(t)
	s := startServer(t, testConfig(t))
	// An older server: the same API without the import route.
	var bulkCalls atomic.Int32
	old := mux.NewRouter()
	old.Path("/plants:import").HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bulkCalls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"error":404,"message":"no route for POST /plants:import"}`))
	})
	target, err := url.Parse(s.API)
	if err != nil {
		t.Fatal(err)
	}
	old.PathPrefix("/").Handler(httputil.NewSingleHostReverseProxy(target))
	ts := httptest.NewServer(old)
	t.Cleanup(ts.Close)
	srv := ts.URL

	file, content, _ := writeImportFile(t, 50)
	if code, stdout, stderr := importCLI(srv, file); code != 0 || stdout != wantCounts(50, 0) || stderr != "" {
		t.Fatalf("import = exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, wantCounts(50, 0))
	}
	if code, stdout, stderr := importCLI(srv, file); code != 0 || stdout != wantCounts(0, 50) || stderr != "" {
		t.Fatalf("import again = exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, wantCounts(0, 50))
	}
	if n := bulkCalls.Load(); n != 2 {
		t.Fatalf("the bulk create was tried %d times, want once per import", n)
	}
	checkStoreEqualsFile(t, s.API, content)
}

// TestImportSplitsAFileOverTheStreamCap: a file larger than the server's
// --max-import-bytes goes in several streams, each starting after the
// lines the one before took; the counts are those of one stream.
func TestImportSplitsAFileOverTheStreamCap(t *testing.T) {
	clearEnv(t)
	cfg := testConfig(t)
	cfg.Plants.MaxImportBytes = 600
	s := startServer(t, cfg)
	file, content, _ := writeImportFile(t, 200)
	if len(content) < 10*600 {
		t.Fatalf("the file is %d bytes: too small to need ten streams", len(content))
	}
	if code, stdout, stderr := importCLI(s.API, file); code != 0 || stdout != wantCounts(200, 0) || stderr != "" {
		t.Fatalf("import = exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, wantCounts(200, 0))
	}
	checkStoreEqualsFile(t, s.API, content)
}
