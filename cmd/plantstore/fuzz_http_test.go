package main

import (
	"bufio"
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// FuzzHTTPRequest sends whole HTTP requests built from fuzz input (method,
// target, extra header lines, body, and whether to send the valid token)
// through the real app's API handler, the full middleware chain included.
// Whatever the input, the answer must not be a 5xx (a panic would be one:
// Recover turns it into a 500), must carry the security headers, and must
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

	api := apiHandler(f, testConfig(f))
	f.Fuzz(func(t *testing.T, method, target, headers string, body []byte, authorized bool) {
		req, ok := buildRequest(method, target, headers, body, authorized)
		if !ok {
			return // net/http refuses it before any handler runs, with a 4xx of its own
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		r := response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
		if r.Status >= 500 {
			t.Fatalf("%s %q answered %d %s", method, target, r.Status, r.Body)
		}
		if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%s %q answered %d without the security headers: %v", method, target, r.Status, r.Header)
		}
		validateResponse(t, req, r)
	})
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
