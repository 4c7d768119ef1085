package main

// The test harness: the real Fx app in-process on random loopback ports,
// the real binary as a child process, and validation of every response
// against the project's OpenAPI document.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"go.uber.org/fx"

	"github.com/plantstore/plantstore/api"
	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/internal/testmode"
	"github.com/plantstore/plantstore/modules/auth"
	httpserver "github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/boltstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/telemetry"
)

// testToken is the API token every harness server accepts.
const testToken = "test-token-0123456789"

// testConfig is a configuration for an in-process server: memory store,
// random loopback ports, quiet logs, no drain delay.
func testConfig(t testing.TB) config {
	t.Helper()
	return config{
		HTTP: httpserver.Config{
			Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
			DrainDelay: 0, ShutdownTimeout: 5 * time.Second,
		},
		Auth:      authConfig([]string{testToken}),
		Plants:    plants.Config{Store: plants.StoreMemory, Bolt: boltstore.Config{DataDir: t.TempDir()}, MaxBodyBytes: plants.DefaultMaxBodyBytes},
		Telemetry: telemetryConfig("error"),
	}
}

// shortParallelPerCPU is how many parallel tests (t.Parallel) run at once
// per processor under -short, unless -parallel says otherwise. Every test
// that starts servers of its own and leaves the environment alone is
// parallel (one that calls t.Setenv cannot be, and runs before them), and
// much of their time is waiting: on PostgreSQL's fsync, on the timeouts
// the hardening tests wait out, and on their servers' stops, each of which
// waits half a second for a connection whose request body went unread
// (net/http lingers before it closes one). At go test's default of one per
// processor, two such waits hold every slot, and the walks, the longest
// tests, could start last. Many more at once would only share the same
// two processors thinner. The full run keeps the default: its child
// processes compute.
const shortParallelPerCPU = 8

// testStores are the store configurations the black-box API tests run
// against, by store name. Each store's test file adds its own from an init
// function (setting cfg.Plants, and skipping or failing through t when a
// program it needs is missing), so every API test covers every store.
var testStores = map[string]func(t *testing.T, cfg *config){
	plants.StoreMemory: func(t *testing.T, cfg *config) { cfg.Plants.Store = plants.StoreMemory },
}

// forEachStore runs test as one subtest per entry of testStores, each with
// a fresh testConfig set up for that store. The subtests run at the same
// time, each with a server and a store of its own: a store's subtest mostly
// waits (for PostgreSQL, for bolt's fsync), and the waits need not come one
// after the other.
func forEachStore(t *testing.T, test func(t *testing.T, cfg config)) {
	t.Helper()
	var stores sync.WaitGroup
	for _, name := range slices.Sorted(maps.Keys(testStores)) {
		stores.Go(func() { t.Run(name, func(t *testing.T) { test(t, storeConfig(t, name)) }) })
	}
	stores.Wait()
}

// storeConfig is a testConfig set up for the named store of testStores.
func storeConfig(t *testing.T, name string) config {
	t.Helper()
	setUp, ok := testStores[name]
	if !ok {
		t.Fatalf("no test store %q", name)
	}
	cfg := testConfig(t)
	setUp(t, &cfg)
	return cfg
}

// testServer is a running in-process app.
type testServer struct {
	API, Admin string // base URLs, e.g. http://127.0.0.1:41234
	Client     *http.Client
	Store      plant.Store           // the app's store, to check what a request left behind
	Ready      *httpserver.Readiness // the app's readiness, to drive /readyz
	app        *fx.App
}

// startServer starts the real Fx app with cfg, and opts added, and stops
// it when the test ends.
func startServer(t *testing.T, cfg config, opts ...fx.Option) *testServer {
	t.Helper()
	var servers *httpserver.Servers
	var store plant.Store
	var ready *httpserver.Readiness
	app := newApp(cfg, append(opts, fx.Populate(&servers, &store, &ready), fx.NopLogger)...)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatalf("start app: %v", err)
	}
	// Concurrent tests keep up to 32 connections each way instead of
	// churning through new ones (the default keeps 2).
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 32
	// The timeout is a bound on a hang, not an expectation: a walk test's
	// seed is one import of 5,000 plants, which took over 10 seconds while
	// dozens of parallel tests shared two busy processors.
	client := &http.Client{Timeout: 30 * time.Second, Transport: transport}
	t.Cleanup(func() {
		// A connection the client dialed but never used counts as active
		// for http.Server.Shutdown for 5 seconds; close them first.
		client.CloseIdleConnections()
		// So are those of the CLI runs (runCLI), whose client uses
		// http.DefaultTransport: a real CLI's exit closes them, an
		// in-process run leaves them open, and a connection dialed for
		// an import's request that another connection served first made
		// the stop wait out its 5 seconds (a CI run's TestMoveBoltToPostgres).
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			t.Errorf("stop app: %v", err)
		}
	})
	return &testServer{
		API:    "http://" + servers.APIAddr().String(),
		Admin:  "http://" + servers.AdminAddr().String(),
		Client: client,
		Store:  store,
		Ready:  ready,
		app:    app,
	}
}

// response is an answer read whole.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into v, failing the test if it is not JSON.
func (r response) JSON(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.Body, err)
	}
}

// do sends req and returns the answer, validated against the OpenAPI
// document.
func (s *testServer) do(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := s.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	r := response{Status: resp.StatusCode, Header: resp.Header, Body: body}
	validateResponse(t, req, r)
	return r
}

// request builds an API request; token "" sends no Authorization header.
func (s *testServer) request(t *testing.T, method, path, token, contentType string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, s.API+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return req
}

// post creates a plant with a valid token and JSON body.
func (s *testServer) post(t *testing.T, body string) response {
	t.Helper()
	return s.do(t, s.request(t, http.MethodPost, "/plants", testToken, "application/json", []byte(body)))
}

// importAll creates the plants of bodies (NewPlant JSON objects) in one
// POST /plants:import, whose creates the store takes 256 at a time and
// commits together, and fails unless every line comes back created, in
// order.
func importAll(t *testing.T, s *testServer, bodies []string) {
	t.Helper()
	r := s.do(t, s.request(t, http.MethodPost, "/plants:import", testToken, "application/x-ndjson", []byte(strings.Join(bodies, "\n")+"\n")))
	if r.Status != http.StatusOK {
		t.Fatalf("import = %d %s", r.Status, r.Body)
	}
	results := strings.Split(strings.TrimSuffix(string(r.Body), "\n"), "\n")
	if len(results) != len(bodies) {
		t.Fatalf("import: %d results for %d plants", len(results), len(bodies))
	}
	for i, line := range results {
		var res struct {
			Line   int    `json:"line"`
			Result string `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &res); err != nil || res.Line != i+1 || res.Result != "created" {
			t.Fatalf("import: result %q for %s, want line %d created", line, bodies[i], i+1)
		}
	}
}

// assertError checks an Error answer: exact status, JSON content type, and a
// body whose "error" equals the status with a non-empty message.
func assertError(t *testing.T, r response, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d; body %s", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	var e map[string]any
	r.JSON(t, &e)
	if len(e) != 2 || e["error"] != float64(status) {
		t.Fatalf("Error body = %s, want exactly {error: %d, message}", r.Body, status)
	}
	if msg, _ := e["message"].(string); msg == "" {
		t.Fatalf("Error body %s has no message", r.Body)
	}
}

var (
	openAPIOnce   sync.Once
	openAPIRouter routers.Router
	openAPIDoc    *openapi3.T
	openAPIErr    error
)

// loadOpenAPI parses and validates api/openapi.yaml once.
func loadOpenAPI(t *testing.T) (*openapi3.T, routers.Router) {
	t.Helper()
	openAPIOnce.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromData(api.OpenAPI)
		if err != nil {
			openAPIErr = fmt.Errorf("load openapi.yaml: %w", err)
			return
		}
		if err := doc.Validate(context.Background()); err != nil {
			openAPIErr = fmt.Errorf("openapi.yaml is invalid: %w", err)
			return
		}
		doc.Servers = nil // match any host: the tests listen on random ports
		openAPIDoc = doc
		openAPIRouter, openAPIErr = gorillamux.NewRouter(doc)
	})
	if openAPIErr != nil {
		t.Fatal(openAPIErr)
	}
	return openAPIDoc, openAPIRouter
}

// validateResponse checks an answer against the OpenAPI document: the
// status must be documented for the operation and the body and headers
// must match. Answers on paths or methods the document does not have (401,
// since credentials are checked before routing, then 404 and 405) must be
// Error bodies.
func validateResponse(t *testing.T, req *http.Request, r response) {
	t.Helper()
	doc, router := loadOpenAPI(t)
	if req.Method == http.MethodHead {
		validateHeadResponse(t, router, req, r)
		return
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		switch r.Status {
		case http.StatusUnauthorized, http.StatusNotFound, http.StatusMethodNotAllowed:
		default:
			t.Fatalf("%s %s answered %d but the OpenAPI document has no such operation", req.Method, req.URL.Path, r.Status)
		}
		validateErrorSchema(t, doc, r)
		return
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 r.Status,
		Header:                 r.Header,
		Options:                opts,
	}
	input.SetBodyBytes(r.Body)
	if err := openapi3filter.ValidateResponse(context.Background(), input); err != nil {
		t.Fatalf("%s %s: answer %d %s does not match the OpenAPI document: %v", req.Method, req.URL.Path, r.Status, r.Body, err)
	}
}

// validateHeadResponse checks a HEAD answer against the document's GET,
// which is all the document describes: HEAD is GET without the body
// (RFC 9110 9.3.2).
func validateHeadResponse(t *testing.T, router routers.Router, req *http.Request, r response) {
	t.Helper()
	if len(r.Body) != 0 {
		t.Fatalf("HEAD %s answered %d with a body of %d bytes", req.URL.Path, r.Status, len(r.Body))
	}
	get := req.Clone(req.Context())
	get.Method = http.MethodGet
	route, _, err := router.FindRoute(get)
	switch {
	case r.Status == http.StatusUnauthorized || r.Status == http.StatusNotFound || r.Status == http.StatusMethodNotAllowed:
	case err != nil:
		t.Fatalf("HEAD %s answered %d but the OpenAPI document has no GET there", req.URL.Path, r.Status)
	case route.Operation.Responses.Status(r.Status) == nil:
		t.Fatalf("HEAD %s answered %d, a status the document's GET does not have", req.URL.Path, r.Status)
	}
}

func validateErrorSchema(t *testing.T, doc *openapi3.T, r response) {
	t.Helper()
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("body %q is not JSON: %v", r.Body, err)
	}
	if err := doc.Components.Schemas["Error"].Value.VisitJSON(v); err != nil {
		t.Fatalf("body %s is not an Error: %v", r.Body, err)
	}
}

// The plantstore binary, built once per test run for child-process tests.
var (
	binaryOnce sync.Once
	binaryPath string
	binaryErr  error
)

// buildBinary builds cmd/plantstore into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	testmode.SkipIfShort(t, "runs the built plantstore binary")
	binaryOnce.Do(func() {
		dir, err := os.MkdirTemp("", "plantstore-bin-")
		if err != nil {
			binaryErr = err
			return
		}
		binaryPath = filepath.Join(dir, "plantstore")
		out, err := exec.Command("go", "build", "-race", "-o", binaryPath, ".").CombinedOutput()
		if err != nil {
			binaryErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binaryErr != nil {
		t.Fatal(binaryErr)
	}
	return binaryPath
}

// process is a plantstore child process.
type process struct {
	Cmd        *exec.Cmd
	API, Admin string // base URLs, known once it listens
	out        *syncBuffer
	exited     chan struct{}
	waitErr    error
}

// startProcess runs the binary with env added to a minimal environment
// (random loopback ports, a token, quiet drain) and waits until both
// listeners are up. It is killed when the test ends if still running.
func startProcess(t *testing.T, env ...string) *process {
	t.Helper()
	return startCommand(t, exec.Command(buildBinary(t)), env...)
}

// childEnv is the minimal environment of a child plantstore: random
// loopback ports, the test token, the memory store, then extra.
func childEnv(t *testing.T, extra ...string) []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"PLANTSTORE_HTTP_ADDR=127.0.0.1:0",
		"PLANTSTORE_ADMIN_ADDR=127.0.0.1:0",
		"PLANTSTORE_TOKENS=" + testToken,
		"PLANTSTORE_STORE=memory",
		"PLANTSTORE_DATA_DIR=" + t.TempDir(),
	}, extra...)
}

// startCommand is startProcess for a command that runs the binary in
// another way, such as under prlimit.
func startCommand(t *testing.T, cmd *exec.Cmd, env ...string) *process {
	t.Helper()
	cmd.Env = append(childEnv(t, "PLANTSTORE_DRAIN_DELAY=0s"), env...)
	p := &process{Cmd: cmd, out: &syncBuffer{}, exited: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrs := make(chan [2]string, 1)
	scanned := make(chan struct{})
	go func() { p.scan(stdout, addrs); close(scanned) }()
	// Wait closes the stdout pipe once the process has exited, so it waits
	// for the scan to reach the pipe's end: called at once, it could drop
	// the last lines the process wrote before exiting (a run's
	// TestSecondSignalStopsAtOnce saw "draining" as the last line, not
	// the stop's).
	go func() { <-scanned; p.waitErr = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.exited
	})
	select {
	case a := <-addrs:
		p.API, p.Admin = "http://"+a[0], "http://"+a[1]
	case <-p.exited:
		t.Fatalf("plantstore exited before listening: %v\n%s", p.waitErr, p.out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("plantstore did not listen within 30s\n%s", p.out.String())
	}
	return p
}

// scan copies the child's stdout into the buffer and reports the listener
// addresses from its "listening" log lines.
func (p *process) scan(stdout io.Reader, addrs chan<- [2]string) {
	var api, admin string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		_, _ = p.out.Write(append(line, '\n'))
		var entry struct{ Msg, Listener, Addr string }
		if json.Unmarshal(line, &entry) != nil || entry.Msg != "listening" {
			continue
		}
		switch entry.Listener {
		case "api":
			api = entry.Addr
		case "admin":
			admin = entry.Addr
		}
		if api != "" && admin != "" {
			addrs <- [2]string{api, admin}
			api = "" // report once
		}
	}
}

// Output is everything the process wrote to stdout and stderr so far.
func (p *process) Output() string { return p.out.String() }

// Signal sends sig and waits for the exit code, failing after timeout.
func (p *process) Signal(t *testing.T, sig os.Signal, timeout time.Duration) int {
	t.Helper()
	if err := p.Cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return p.Wait(t, timeout)
}

// Wait waits for the process to exit and returns its exit code.
func (p *process) Wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.Cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		t.Fatalf("plantstore did not exit within %v\n%s", timeout, p.Output())
		return -1
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes and reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// eventually polls cond every 10 ms until it holds, failing the test once
// timeout has passed. It is for state that changes asynchronously in the
// processes and servers a test runs (a reloaded file, a draining server);
// the timeout is a bound, not an expectation.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Wait(t, 10*time.Millisecond, timeout, what, func() (bool, error) { return cond(), nil })
}

// requireProgram returns the path of a program the test needs. Missing, it
// skips with a loud reason on a laptop and fails under CI=true, where .ci/run
// must have installed it.
func requireProgram(t *testing.T, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	msg := fmt.Sprintf("%s is not installed (%s)", name, install)
	if os.Getenv("CI") == "true" {
		t.Fatal("CI: " + msg)
	}
	t.Skip("SKIPPED, NOT TESTED: " + msg)
	return ""
}

func authConfig(tokens []string) auth.Config { return auth.Config{Tokens: tokens} }

func telemetryConfig(level string) telemetry.Config {
	return telemetry.Config{LogLevel: level, LogFormat: "json"}
}
