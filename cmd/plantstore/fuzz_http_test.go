package main

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants"
)

// FuzzHTTPRequest sends whole HTTP requests built from fuzz input (method,
// target, extra header lines, body, and whether to send the valid token)
// through the real app's API handler, the full middleware chain included,
// once on each store: memory, bolt and a real PostgreSQL. Whatever the
// input, no store may answer a 5xx (a panic would be one: Recover turns it
// into a 500; PostgreSQL refusing a value the others take would be
// another), every store must give the same status and body (each has seen
// the same requests), and the answer must carry the security headers and
// match the OpenAPI document. The seed corpus runs with `make test`;
// .ci/run fuzzes for a bounded time:
//
//	go test -run '^$' -fuzz '^FuzzHTTPRequest$' -fuzztime 30s ./cmd/plantstore
func FuzzHTTPRequest(f *testing.F) {
	const json = "Content-Type: application/json"
	for _, seed := range []struct {
		method, target, headers, body string
		authorized                    bool
	}{
		{"POST", "/plants", json, `{"id":1,"name":"Monstera","tag":"tropical"}`, true},
		{"POST", "/plants", json, `{"id":-9223372036854775808,"name":""}`, true},
		{"POST", "/plants", json, `{"id":1,"name":"other"}`, true},
		{"POST", "/plants", json, `{"id":1,"id":2,"name":"dup"}`, true},
		{"POST", "/plants", json, `{"id":1e999999,"name":"x"}`, true},
		{"POST", "/plants", json, `{"id":1,"name":"a","x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, true},
		{"POST", "/plants", json, `{"id":1,"name":"a\ud800"}`, true},
		{"POST", "/plants", json, "{\"id\":1,\"name\":\"\xff\"}", true},
		{"POST", "/plants", json, `[]`, true},
		{"POST", "/plants", json, `{"id":2,"name":"a"} {}`, true},
		{"POST", "/plants", "Content-Type: application/json; charset=utf-8", `{"id":3,"name":"a"}`, true},
		{"POST", "/plants", "Content-Type: text/plain", `{"id":4,"name":"a"}`, true},
		{"POST", "/plants", json + "\r\nTransfer-Encoding: chunked", "5\r\n{\"id\"\r\n0\r\n\r\n", true},
		{"POST", "/plants", json, `{"id":5,"name":"a"}`, false},
		{"POST", "/plants", json + "\r\nAuthorization: Basic dXNlcjpwYXNz", `{}`, false},
		{"POST", "/plants?x=1&x=2", json, `{"id":6,"name":"a"}`, true},
		{"GET", "/plants", "", "", true},
		{"GET", "/plants?limit=-1&after=x&tag=%zz", "", "", true},
		{"GET", "/plants/1", "", "", true},
		{"GET", "/plants?tag=tropical&limit=1", "", "", true},
		// What PostgreSQL's text cannot hold, and ids in a second spelling.
		{"GET", "/plants?tag=%ff", "", "", true},
		{"GET", "/plants?tag=a%00", "", "", true},
		{"GET", "/plants?after=%2B4&limit=0001", "", "", true},
		{"GET", "/plants/+1", "", "", true},
		{"GET", "/plants/%ff", "", "", true},
		{"DELETE", "/plants/001", "", "", true},
		{"DELETE", "/plants/-0", "", "", true},
		// Bodies that could be read more than one way.
		{"POST", "/plants", json + "\r\nContent-Type: text/plain", `{"id":8,"name":"a"}`, true},
		{"POST", "/plants", json + "\r\nContent-Encoding: gzip", `{"id":9,"name":"a"}`, true},
		{"GET", "/plants/abc", "", "", true},
		{"DELETE", "/plants/99999999999999999999", "", "", true},
		{"PUT", "/plants", json, `{}`, true},
		{"BREW", "/plants", "", "", true},
		{"OPTIONS", "*", "", "", true},
		{"GET", "/../../etc/passwd", "", "", true},
		{"GET", "//plants", "", "", true},
		{"GET", "/plants/%2e%2e", "", "", true},
		{"POST", "http://evil.example/plants", json, `{"id":7,"name":"a"}`, true},
	} {
		f.Add(seed.method, seed.target, seed.headers, []byte(seed.body), seed.authorized)
	}

	stores := fuzzStores(f)
	f.Fuzz(func(t *testing.T, method, target, headers string, body []byte, authorized bool) {
		var first response
		for i, store := range stores {
			// A request is read once; each store gets its own.
			req, ok := buildRequest(method, target, headers, body, authorized)
			if !ok {
				return // net/http refuses it before any handler runs, with a 4xx of its own
			}
			rec := httptest.NewRecorder()
			store.api.ServeHTTP(rec, req)
			r := response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
			if r.Status >= 500 {
				t.Fatalf("%s: %s %q answered %d %s", store.name, method, target, r.Status, r.Body)
			}
			if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("%s: %s %q answered %d without the security headers: %v", store.name, method, target, r.Status, r.Header)
			}
			validateResponse(t, req, r)
			if i == 0 {
				first = r
			} else if r.Status != first.Status || !bytes.Equal(r.Body, first.Body) {
				t.Fatalf("%s %q: %s answered %d %s, %s %d %s", method, target,
					stores[0].name, first.Status, first.Body, store.name, r.Status, r.Body)
			}
		}
	})
}

// fuzzStore is the started app's API handler on one store.
type fuzzStore struct {
	name string
	api  http.Handler
}

// fuzzStores starts the app on each store, each store on storage of its
// own (a fresh database on the shared test cluster for postgres), and
// stops them when the fuzz target ends. A fuzzing worker is a process of
// its own, so each worker starts its own stores.
func fuzzStores(f *testing.F) []fuzzStore {
	f.Helper()
	memory := testConfig(f)
	bolt := testConfig(f)
	bolt.Plants.Store = plants.StoreBolt
	postgres := testConfig(f)
	postgres.Plants.Store, postgres.Plants.Postgres.URL = plants.StorePostgres, pgtest.NewDatabase(f)
	return []fuzzStore{
		{plants.StoreMemory, startedAPIHandler(f, memory)},
		{plants.StoreBolt, startedAPIHandler(f, bolt)},
		{plants.StorePostgres, startedAPIHandler(f, postgres)},
	}
}

// startedAPIHandler starts the real app with cfg (postgres needs its start
// hook, which migrates) and returns the API listener's handler, the whole
// middleware chain included; the app stops when tb ends.
func startedAPIHandler(tb testing.TB, cfg config) http.Handler {
	tb.Helper()
	var api http.Handler
	app := newApp(cfg, fx.Invoke(fx.Annotate(func(h http.Handler) { api = h }, fx.ParamTags(`name:"api"`))), fx.NopLogger)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := app.Stop(ctx); err != nil {
			tb.Error(err)
		}
	})
	return api
}

// buildRequest writes the request as a client would send it and parses it
// with net/http's own parser, as the server does; ok is false for what the
// server would refuse before reaching a handler.
func buildRequest(method, target, headers string, body []byte, authorized bool) (*http.Request, bool) {
	var raw bytes.Buffer
	raw.WriteString(method + " " + target + " HTTP/1.1\r\nHost: plantstore\r\n")
	if authorized {
		raw.WriteString("Authorization: Bearer " + testToken + "\r\n")
	}
	for line := range strings.SplitSeq(headers, "\n") {
		if line = strings.TrimSuffix(line, "\r"); line != "" {
			raw.WriteString(line + "\r\n")
		}
	}
	if !strings.Contains(strings.ToLower(headers), "transfer-encoding") {
		raw.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n")
	}
	raw.WriteString("\r\n")
	raw.Write(body)
	req, err := http.ReadRequest(bufio.NewReader(&raw))
	if err != nil {
		return nil, false
	}
	// The server sets these from the connection; ReadRequest cannot.
	req.RemoteAddr = "127.0.0.1:50000"
	req.RequestURI = target
	return req, true
}
