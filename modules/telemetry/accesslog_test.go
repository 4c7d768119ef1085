package telemetry

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

func TestAccessLogLineHasEveryField(t *testing.T) {
	c := newChain(t, true, plantsRoute(created))
	w := c.do(http.MethodPost, "/plants", `{"id":1}`, "traceparent", sampled, "X-Request-ID", "req-42")

	if got := w.Header().Get("X-Request-ID"); got != "req-42" {
		t.Errorf("X-Request-ID echoed as %q, want req-42", got)
	}
	lines := c.accessLines()
	if len(lines) != 1 {
		t.Fatalf("got %d access lines, want 1: %v", len(lines), lines)
	}
	line := lines[0]
	if line.Level != zapcore.InfoLevel || line.Message != "request" {
		t.Errorf("line is %v %q, want info \"request\"", line.Level, line.Message)
	}
	fields := line.ContextMap()
	server := c.spans.Ended()[0]
	want := map[string]any{
		"method":     "POST",
		"route":      "/plants",
		"status":     int64(http.StatusCreated),
		"bytes":      int64(len("hello")),
		"request_id": "req-42",
		"trace_id":   callerTraceID,
		"span_id":    server.SpanContext().SpanID().String(),
	}
	for k, v := range want {
		if fields[k] != v {
			t.Errorf("field %s = %#v, want %#v", k, fields[k], v)
		}
	}
	if d, ok := fields["duration"].(time.Duration); !ok || d <= 0 {
		t.Errorf("field duration = %#v, want a positive duration", fields["duration"])
	}
	if len(fields) != len(want)+1 {
		t.Errorf("line has fields %v, want exactly %v and duration", keys(fields), keys(want))
	}
}

func TestAccessLogUntracedHasNoTraceFields(t *testing.T) {
	c := newChain(t, false, plantsRoute(created))
	c.do(http.MethodPost, "/plants", "", "traceparent", sampled)
	fields := c.accessLines()[0].ContextMap()
	for _, k := range []string{"trace_id", "span_id"} {
		if v, ok := fields[k]; ok {
			t.Errorf("untraced request logged %s=%v", k, v)
		}
	}
}

func TestAccessLogUnmatchedPathLogsTheFixedRoute(t *testing.T) {
	c := newChain(t, false, plantsRoute(created))
	w := c.do(http.MethodGet, "/secret-looking/path?token=abc", "")
	if w.Code != http.StatusNotFound {
		t.Fatalf("status %d, want 404", w.Code)
	}
	fields := c.accessLines()[0].ContextMap()
	if fields["route"] != "unmatched" || fields["status"] != int64(http.StatusNotFound) {
		t.Errorf("route, status = %v, %v; want unmatched, 404", fields["route"], fields["status"])
	}
}

func TestAccessLogNeverLogsCredentials(t *testing.T) {
	const token = "tok-0123456789abcdef"
	c := newChain(t, true, plantsRoute(created))
	c.do(http.MethodPost, "/plants?access_token="+token, "", "Authorization", "Bearer "+token, "Cookie", "session="+token)
	for _, line := range c.logs.AllUntimed() {
		for k, v := range line.ContextMap() {
			if s, ok := v.(string); ok && strings.Contains(s, token) {
				t.Errorf("log line %q carries the token in %s=%q", line.Message, k, s)
			}
		}
	}
}

// generatedID is a process prefix of 26 base32 characters and a base-36 counter.
var generatedID = regexp.MustCompile(`^[A-Z2-7]{26}-[0-9a-z]+$`)

func TestRequestIDIsKeptWhenSafeAndReplacedOtherwise(t *testing.T) {
	for _, tc := range []struct {
		name, sent string
		kept       bool
	}{
		{"uuid", "0f8fad5b-d9cb-469f-a165-70867728950e", true},
		{"base64", "q83vEjRWeJA+/w==", true},
		{"dotted", "edge.a1:7_x", true},
		{"longest", strings.Repeat("a", maxRequestIDLen), true},
		{"missing", "", false},
		{"too long", strings.Repeat("a", maxRequestIDLen+1), false},
		{"space", "a b", false},
		{"quote", `a"b`, false},
		{"newline", "a\nb", false},
		{"non-ascii", "café", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChain(t, false, plantsRoute(created))
			headers := []string{}
			if tc.sent != "" {
				headers = append(headers, "X-Request-ID", tc.sent)
			}
			w := c.do(http.MethodPost, "/plants", "", headers...)
			echoed := w.Header().Get("X-Request-ID")
			logged := c.accessLines()[0].ContextMap()["request_id"]
			if logged != echoed {
				t.Errorf("logged request_id %q, echoed %q", logged, echoed)
			}
			if tc.kept && echoed != tc.sent {
				t.Errorf("echoed %q, want the client's %q", echoed, tc.sent)
			}
			if !tc.kept && !generatedID.MatchString(echoed) {
				t.Errorf("echoed %q, want a generated id (prefix-counter)", echoed)
			}
		})
	}
}

func TestGeneratedRequestIDsDiffer(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newRequestID()
		if seen[id] {
			t.Fatalf("request id %s generated twice", id)
		}
		seen[id] = true
	}
}

func TestPanicIsLoggedAndCountedAs500(t *testing.T) {
	c := newChain(t, false, plantsRoute(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		panic("boom")
	})))
	w := c.do(http.MethodPost, "/plants", "")
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", w.Code)
	}
	if got := c.accessLines()[0].ContextMap()["status"]; got != int64(http.StatusInternalServerError) {
		t.Errorf("access line status %v, want 500", got)
	}
	if n := histogramCount(t, c.reg, map[string]string{"route": "/plants", "code": "500"}); n != 1 {
		t.Errorf("requests counted with code 500: %d, want 1", n)
	}
	if v := gaugeValue(t, c.reg, "http_server_active_requests"); v != 0 {
		t.Errorf("in-flight gauge %v after the panic, want 0", v)
	}
}

// A panic after the answer began cannot become a 500: Recover, told by the
// shared capture that the answer started, aborts the connection instead,
// and the line and the count keep the status that went out.
func TestPanicAfterTheAnswerBeganAbortsTheConnection(t *testing.T) {
	c := newChain(t, false, plantsRoute(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("partial"))
		panic("boom")
	})))
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler { //nolint:errorlint // net/http compares with == too
				t.Errorf("the chain panicked with %v, want http.ErrAbortHandler", v)
			}
		}()
		c.do(http.MethodPost, "/plants", "")
	}()
	fields := c.accessLines()[0].ContextMap()
	if fields["status"] != int64(http.StatusOK) || fields["bytes"] != int64(len("partial")) {
		t.Errorf("access line status %v bytes %v, want 200 and 7", fields["status"], fields["bytes"])
	}
	if n := histogramCount(t, c.reg, map[string]string{"route": "/plants", "code": "200"}); n != 1 {
		t.Errorf("requests counted with code 200: %d, want 1", n)
	}
}

func keys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// TestAccessLogNamesTheCaller: the principal auth attached, further in the
// chain, is named in the access line; a request no authenticator accepted
// has no caller field.
func TestAccessLogNamesTheCaller(t *testing.T) {
	caller := &principal.Principal{ID: "token:0123456789abcdef", Name: "token:0123456789abcdef", AllScopes: true}
	c := newChain(t, false, plantsRoute(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Stands for auth, which runs inside the access log and attaches
		// the principal to the router's record.
		if r.Header.Get("X-Test-Caller") != "" && !httpapi.Attach(r.Context(), principal.Key{}, caller) {
			t.Error("no router's record in the request's context")
		}
		w.WriteHeader(http.StatusCreated)
	})))
	c.do(http.MethodPost, "/plants", "", "X-Test-Caller", "yes")
	c.do(http.MethodPost, "/plants", "")
	lines := c.accessLines()
	if len(lines) != 2 {
		t.Fatalf("got %d access lines, want 2", len(lines))
	}
	if got := lines[0].ContextMap()["caller"]; got != caller.Name {
		t.Errorf("caller = %#v, want %q", got, caller.Name)
	}
	if got, ok := lines[1].ContextMap()["caller"]; ok {
		t.Errorf("an unauthenticated request logged caller=%#v", got)
	}
}
