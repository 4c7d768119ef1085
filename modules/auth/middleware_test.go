package auth

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMiddleware(t *testing.T) {
	const token = "s3cret-token"
	const challenge = `Bearer realm="plantstore"`
	const invalid = `Bearer realm="plantstore", error="invalid_token"`
	for _, tc := range []struct {
		name      string
		header    []string // Authorization values; none for a missing header
		ok        bool
		challenge string
		message   string
		reason    string
	}{
		{name: "valid", header: []string{"Bearer " + token}, ok: true},
		{name: "scheme in lower case", header: []string{"bearer " + token}, ok: true},
		{name: "scheme in upper case", header: []string{"BEARER " + token}, ok: true},
		{name: "spaces around the token", header: []string{"Bearer   " + token + "  "}, ok: true},
		{name: "no header", challenge: challenge, reason: reasonMissing,
			message: "a bearer token is required: send Authorization: Bearer <token>"},
		{name: "empty header", header: []string{""}, challenge: challenge, reason: reasonMissing,
			message: "a bearer token is required: send Authorization: Bearer <token>"},
		{name: "basic", header: []string{"Basic dXNlcjpwYXNz"}, challenge: challenge, reason: reasonScheme,
			message: "the Authorization header must use the Bearer scheme"},
		{name: "token without scheme", header: []string{token}, challenge: challenge, reason: reasonScheme,
			message: "the Authorization header must use the Bearer scheme"},
		{name: "bearer without token", header: []string{"Bearer"}, challenge: challenge, reason: reasonEmpty,
			message: "a bearer token is required: send Authorization: Bearer <token>"},
		{name: "bearer with blank token", header: []string{"Bearer    "}, challenge: challenge, reason: reasonEmpty,
			message: "a bearer token is required: send Authorization: Bearer <token>"},
		{name: "wrong token", header: []string{"Bearer wrong"}, challenge: invalid, reason: reasonInvalid,
			message: "the bearer token is not valid"},
		{name: "token with a suffix", header: []string{"Bearer " + token + "x"}, challenge: invalid, reason: reasonInvalid,
			message: "the bearer token is not valid"},
		// Two headers are refused whatever their order: a proxy in front may
		// read the other one.
		{name: "invalid then valid header", header: []string{"Bearer wrong", "Bearer " + token}, challenge: challenge,
			reason: reasonDuplicate, message: "send one Authorization header, not several"},
		{name: "valid then invalid header", header: []string{"Bearer " + token, "Bearer wrong"}, challenge: challenge,
			reason: reasonDuplicate, message: "send one Authorization header, not several"},
		{name: "the valid header twice", header: []string{"Bearer " + token, "Bearer " + token}, challenge: challenge,
			reason: reasonDuplicate, message: "send one Authorization header, not several"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := newAuthMiddleware(newTokenSet([]string{token}), reg)
			if err != nil {
				t.Fatal(err)
			}
			reached := false
			h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached = true
				w.WriteHeader(http.StatusNoContent)
			}))
			// The body must not be touched before the credentials are checked.
			req := httptest.NewRequest(http.MethodPost, "/plants", untouchable{t})
			for _, v := range tc.header {
				req.Header.Add("Authorization", v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			if tc.ok {
				if !reached || rec.Code != http.StatusNoContent || rec.Header().Get("WWW-Authenticate") != "" {
					t.Fatalf("valid credentials: reached=%v, answer %d %s", reached, rec.Code, rec.Body)
				}
				if c := rec.Header().Get("Connection"); c != "" {
					t.Fatalf("Connection = %q on a valid request, want none (keep-alive)", c)
				}
				for _, reason := range reasons {
					if n := testutil.ToFloat64(m.failures.WithLabelValues(reason)); n != 0 {
						t.Fatalf("failures{reason=%q} = %v after a valid request", reason, n)
					}
				}
				return
			}
			if reached {
				t.Fatal("refused request reached the handler")
			}
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401", rec.Code)
			}
			if got := rec.Header().Values("WWW-Authenticate"); len(got) != 1 || got[0] != tc.challenge {
				t.Fatalf("WWW-Authenticate = %q, want %q", got, tc.challenge)
			}
			// A refused client has nothing more to send: its connection
			// must not stay open, holding a file descriptor.
			if c := rec.Header().Values("Connection"); len(c) != 1 || c[0] != "close" {
				t.Fatalf("Connection = %q, want close", c)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type = %q", ct)
			}
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body) != 2 ||
				body["error"] != float64(401) || body["message"] != tc.message {
				t.Fatalf("body = %s, want {error: 401, message: %q}", rec.Body, tc.message)
			}
			// Exactly this reason was counted, and every reason's series exists.
			if n := testutil.CollectAndCount(reg, "plantstore_auth_failures_total"); n != len(reasons) {
				t.Fatalf("plantstore_auth_failures_total has %d series, want %d", n, len(reasons))
			}
			for _, reason := range reasons {
				want := 0.0
				if reason == tc.reason {
					want = 1
				}
				if n := testutil.ToFloat64(m.failures.WithLabelValues(reason)); n != want {
					t.Fatalf("failures{reason=%q} = %v, want %v", reason, n, want)
				}
			}
		})
	}
}

func TestNewMiddlewareRegistersOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := newAuthMiddleware(newTokenSet([]string{"t"}), reg); err != nil {
		t.Fatal(err)
	}
	if _, err := newAuthMiddleware(newTokenSet([]string{"t"}), reg); err == nil {
		t.Fatal("registering the failure counter twice on one registry succeeded")
	}
}

// untouchable is a request body that fails the test when read.
type untouchable struct{ t *testing.T }

func (u untouchable) Read([]byte) (int, error) {
	u.t.Error("the request body was read before authentication")
	return 0, io.EOF
}
