package webhooks

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// Retry-After is waited at most MaxRetryWait in every form it comes in:
// seconds of any length, and each of HTTP's three date formats.
func TestRetryAfterIsCappedInEveryForm(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC) // a Tuesday
	for v, want := range map[string]time.Duration{
		"172800":                            48 * time.Hour,
		"172801":                            48 * time.Hour,
		"99999999":                          48 * time.Hour,
		"99999999999999999999999":           48 * time.Hour, // past int64
		"+120":                              0,              // not delay-seconds
		"Wed, 24 Nov 2027 12:00:00 GMT":     48 * time.Hour, // a year ahead, RFC 1123
		"Wednesday, 24-Nov-27 12:00:00 GMT": 48 * time.Hour, // RFC 850
		"Wed Nov 24 12:00:00 2027":          48 * time.Hour, // ANSI C
		"Fri, 31 Dec 9999 23:59:59 GMT":     48 * time.Hour,
		"Thu, 26 Nov 2026 12:00:01 GMT":     48 * time.Hour,
		"Thu, 26 Nov 2026 11:00:00 GMT":     47 * time.Hour,
		"Thursday, 26-Nov-26 11:00:00 GMT":  47 * time.Hour,
		"Thu Nov 26 11:00:00 2026":          47 * time.Hour,
		"Tue, 24 Nov 2026 11:59:59 GMT":     0,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
	d := &Dispatcher{cfg: Config{Retries: DefaultRetries}}
	if got := d.backoff(1, parseRetryAfter("Wed, 24 Nov 2027 12:00:00 GMT", now)); got != 48*time.Hour {
		t.Errorf("backoff after a Retry-After a year ahead = %v, want 48h", got)
	}
}

// The answer's headers are read up to 64 KiB, as its body is: more fail
// the attempt, whatever its status.
func TestAnAnswersHeadersAreReadOnlySoFar(t *testing.T) {
	secret := webhookstest.NewSecret()
	answer := func(headerBytes int) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			pad := strings.Repeat("x", 1000)
			for i := range headerBytes / 1000 {
				w.Header().Set("X-Pad-"+strconv.Itoa(i), pad)
			}
			w.WriteHeader(http.StatusOK)
		}))
	}
	s := newPoster(testConfig(), tracenoop.NewTracerProvider())
	dl := outbox.Delivery{ID: outbox.NewID(), Body: []byte(`{"id":1,"name":"a"}`), Attempt: 1}
	for _, c := range []struct {
		headerBytes int
		want        attemptResult
	}{
		{32 << 10, attemptResult{outcome: outcomeDelivered, status: http.StatusOK, record: outbox.Attempt{Status: http.StatusOK}}},
		{1 << 20, attemptResult{outcome: outcomeError, reason: "net/http: HTTP/1.x transport connection broken: net/http: server response headers exceeded 65536 bytes; aborted",
			record: outbox.Attempt{Error: outbox.ErrorConnection}}},
	} {
		srv := answer(c.headerBytes)
		got := s.attempt(ctx, endpoint(t, "crm", srv.URL, secret), dl)
		srv.Close()
		got.record.At, got.record.Latency = time.Time{}, 0 // the clock's
		if got != c.want {
			t.Errorf("an answer with %d bytes of headers: %+v, want %+v", c.headerBytes, got, c.want)
		}
	}
}

// An attempt's record keeps the answer's first KiB as text, and classes a
// failure without an answer: a refused connection, a TLS failure.
func TestAnAttemptsRecord(t *testing.T) {
	secret := webhookstest.NewSecret()
	s := newPoster(testConfig(), tracenoop.NewTracerProvider())
	dl := outbox.Delivery{ID: outbox.NewID(), Body: []byte(`{"id":1,"name":"a"}`), Attempt: 1}
	long := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(strings.Repeat("é", 2000))) // 4000 bytes
	}))
	defer long.Close()
	got := s.attempt(ctx, endpoint(t, "crm", long.URL, secret), dl)
	if want := strings.Repeat("é", outbox.MaxAnswerBytes/2); got.record.Status != 503 || got.record.Answer != want || got.record.Error != "" {
		t.Errorf("a long answer's record = status %d, error %q, %d bytes of answer; want 503, none, %d bytes", got.record.Status, got.record.Error, len(got.record.Answer), len(want))
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close() // nothing listens there now
	if got := s.attempt(ctx, endpoint(t, "crm", closed.URL, secret), dl); got.record.Status != 0 || got.record.Error != outbox.ErrorRefused {
		t.Errorf("a refused connection's record = %+v, want error %q", got.record, outbox.ErrorRefused)
	}
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler()) // its certificate is no CA's the sender trusts
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0)           // the handshake it refuses is the point
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	if got := s.attempt(ctx, endpoint(t, "crm", tlsSrv.URL, secret), dl); got.record.Status != 0 || got.record.Error != outbox.ErrorTLS {
		t.Errorf("a TLS failure's record = %+v, want error %q", got.record, outbox.ErrorTLS)
	}
}
