package main

import (
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/auth"
)

// A run of the real binary, with tracing on and the log level raised to
// debug halfway through: the access line has every field (the caller's
// name among them), and neither the
// valid token nor a rejected one appears anywhere in what the process wrote.
func TestLogsHaveAccessFieldsAndNeverAToken(t *testing.T) {
	const wrongToken = "wrong-token-9876543210"
	rcv := startOTLPReceiver(t)
	p := startProcess(t, "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.URL, "PLANTSTORE_LOG_LEVEL=info")

	send := func(req *http.Request) *http.Response {
		t.Helper()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	newRequest := func(method, url, body string, headers ...string) *http.Request {
		t.Helper()
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		return req
	}

	tc := newTraceContext(t)
	create := tracedCreate(t, p.API, tc, `{"id":1,"name":"Monstera","tag":"tropical"}`)
	create.Header.Set("X-Request-ID", "e2e-request-1")
	if resp := send(create); resp.StatusCode != http.StatusOK || resp.Header.Get("X-Request-ID") != "e2e-request-1" {
		t.Fatalf("create = %d, X-Request-ID %q; want 200, e2e-request-1", resp.StatusCode, resp.Header.Get("X-Request-ID"))
	}
	// Raise the level at run time, then send credentials every wrong way.
	if resp := send(newRequest(http.MethodPut, p.Admin+"/loglevel", `{"level":"debug"}`,
		"Content-Type", "application/json")); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /loglevel = %d", resp.StatusCode)
	}
	for _, req := range []*http.Request{
		newRequest(http.MethodPost, p.API+"/plants", `{}`, "Authorization", "Bearer "+wrongToken, "Content-Type", "application/json"),
		newRequest(http.MethodPost, p.API+"/plants", `{}`, "Authorization", "Basic "+testToken),
		newRequest(http.MethodPost, p.API+"/plants?access_token="+testToken, `{"id":2,"name":"`+testToken+`"}`,
			"Authorization", "Bearer "+testToken, "Content-Type", "application/json", "X-Request-ID", testToken+" x"),
		newRequest(http.MethodPost, p.API+"/plants", `{"id":`+testToken+`}`, "Authorization", "Bearer "+testToken, "Content-Type", "application/json"),
		newRequest(http.MethodGet, p.API+"/"+testToken, "", "Authorization", "Bearer "+testToken),
		newRequest(http.MethodGet, p.API+"/"+wrongToken, "", "Authorization", "Bearer "+wrongToken),
	} {
		send(req)
	}
	if code := p.Signal(t, syscall.SIGTERM, 60*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, p.Output())
	}

	out := p.Output()
	for _, secret := range []string{testToken, wrongToken} {
		if strings.Contains(out, secret) {
			t.Errorf("the output contains the token %q:\n%s", secret, out)
		}
	}
	access := accessLines(t, out)
	if len(access) != 7 {
		t.Errorf("got %d access lines, want one per API request (7)", len(access))
	}
	var line map[string]any
	for _, l := range access {
		if l["request_id"] == "e2e-request-1" {
			line = l
		}
	}
	if line == nil {
		t.Fatalf("no access line with request_id e2e-request-1 in\n%s", out)
	}
	want := map[string]any{
		"level": "info", "logger": "access", "msg": "request",
		"method": "POST", "route": "/plants", "status": float64(200),
		"bytes":    float64(len(`{"name":"Monstera","tag":"tropical"}`)),
		"trace_id": tc.traceID,
		"caller":   auth.TokenName(sha256.Sum256([]byte(testToken))), // the token's name, never the token
	}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("access line %s = %#v, want %#v", k, line[k], v)
		}
	}
	if d, ok := line["duration"].(float64); !ok || d <= 0 {
		t.Errorf("access line duration = %#v, want positive seconds", line["duration"])
	}
	if id, _ := line["span_id"].(string); !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(id) || id == tc.spanID {
		t.Errorf("access line span_id = %q, want the server span's own id", line["span_id"])
	}
	if _, ok := line["time"]; !ok {
		t.Error("access line has no time")
	}
	// The rejected X-Request-ID (it has a space) was replaced, not logged.
	for _, l := range access {
		if id, _ := l["request_id"].(string); id == "" {
			t.Errorf("access line without request_id: %v", l)
		}
	}
}

// accessLines parses the JSON lines of the access logger out of output.
func accessLines(t *testing.T, output string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, raw := range strings.Split(output, "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(raw), &l) == nil && l["logger"] == "access" {
			lines = append(lines, l)
		}
	}
	return lines
}
