package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// fast retries keep the tests quick; what is asserted is the outcome.
var fast = WithRetries(4, time.Millisecond, 2*time.Millisecond)

// TestRetriesOn503And429: answers 503 and 429 (with Retry-After: 0) are
// retried until the success.
func TestRetriesOn503And429(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("Authorization = %q", r.Header.Get("Authorization"))
		}
		switch calls.Add(1) {
		case 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":503,"message":"the plant store is unavailable; retry later"}`))
		case 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":429,"message":"slow down"}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"name":"a"}`))
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL, WithToken("tok"), fast)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(context.Background(), Plant{ID: 1, Name: "a"}); err != nil {
		t.Fatalf("Create = %v", err)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d calls, want 3", n)
	}
}

// TestGivesUpWithTheServersMessage: after the retries, the last answer is
// the error, usable with errors.Is and errors.As.
func TestGivesUpWithTheServersMessage(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":503,"message":"the plant store is unavailable; retry later"}`))
	}))
	defer srv.Close()
	c, _ := New(srv.URL, fast)
	_, err := c.Get(context.Background(), 1)
	var apiErr *Error
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &apiErr) || apiErr.Message != "the plant store is unavailable; retry later" {
		t.Fatalf("Get = %v, want ErrUnavailable with the message", err)
	}
	if n := calls.Load(); n != 5 {
		t.Fatalf("%d calls, want 1 + 4 retries", n)
	}
}

// TestConnectionErrors: a repeatable call is retried after a connection
// error, a delete is not (a repeat of a delete that happened answers 404).
func TestConnectionErrors(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // no answer at all
			return
		}
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":1,"name":"a"}`))
	}))
	defer srv.Close()
	c, _ := New(srv.URL, fast)
	if p, err := c.Get(context.Background(), 1); err != nil || p.Name != "a" {
		t.Fatalf("Get after a dropped connection = %+v, %v", p, err)
	}
	calls.Store(0)
	if err := c.Delete(context.Background(), 1, ""); err == nil {
		t.Fatal("Delete after a dropped connection succeeded: it was retried")
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("Delete made %d calls, want 1", n)
	}
}

// TestContextEndsRetries: a canceled context stops the waiting at once.
func TestContextEndsRetries(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c, _ := New(srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	go cancel()
	if _, err := c.Get(ctx, 1); err == nil {
		t.Fatal("Get with a canceled context succeeded")
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"0":                             0,
		"2":                             2 * time.Second,
		"3600":                          time.Minute, // capped
		"Tue, 24 Nov 2026 12:00:05 GMT": 5 * time.Second,
		"Tue, 24 Nov 2026 11:00:00 GMT": 0, // in the past
	}
	for v, want := range cases {
		if got, ok := parseRetryAfter(v, now); !ok || got != want {
			t.Errorf("parseRetryAfter(%q) = %v, %v; want %v", v, got, ok, want)
		}
	}
	for _, v := range []string{"", "-1", "soon"} {
		if _, ok := parseRetryAfter(v, now); ok {
			t.Errorf("parseRetryAfter(%q) ok", v)
		}
	}
}

func TestBackoffStaysWithinBounds(t *testing.T) {
	p := retryPolicy{attempts: 10, first: 100 * time.Millisecond, max: time.Second}
	for attempt := range 40 {
		if d := p.backoff(attempt); d < 0 || d >= time.Second {
			t.Fatalf("backoff(%d) = %v, want in [0, 1s)", attempt, d)
		}
	}
}
