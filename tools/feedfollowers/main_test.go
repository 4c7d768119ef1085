package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestStreamCountsEventsAndResumes: a stream's changes and bookmarks are
// counted apart, the last event's id is kept, and the next stream sends it
// as Last-Event-ID with the token; a refusal is counted as one.
func TestStreamCountsEventsAndResumes(t *testing.T) {
	var mu sync.Mutex
	var seen []string // each request's Authorization, Accept and Last-Event-ID
	refuse := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" | "+r.Header.Get("Accept")+" | "+r.Header.Get("Last-Event-ID")+" | "+r.URL.RawQuery)
		refused := refuse
		mu.Unlock()
		if refused {
			http.Error(w, `{"error":429,"message":"too many"}`, http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("id: c1\nevent: plant.created\ndata: {}\n\n: heartbeat\n\nid: c2\nevent: bookmark\ndata: {\"cursor\":\"c2\"}\n\nid: c3\nevent: plant.deleted\ndata: {}\n\n"))
	}))
	defer srv.Close()
	target := srv.URL + "/plants/changes?after=now&tag=rose"
	var c counts
	last := ""
	for range 2 {
		if err := stream(context.Background(), target, "bench-token", &last, &c); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	refuse = true
	mu.Unlock()
	if err := stream(context.Background(), target, "bench-token", &last, &c); err == nil || err.Error() != "429 Too Many Requests" {
		t.Fatalf("a refused stream: %v, want 429 Too Many Requests", err)
	}
	if got := [4]int64{c.opened.Load(), c.changes.Load(), c.bookmarks.Load(), c.refused.Load()}; got != [4]int64{2, 4, 2, 1} {
		t.Fatalf("opened, changes, bookmarks, refused = %v, want [2 4 2 1]", got)
	}
	want := []string{
		"Bearer bench-token | text/event-stream |  | after=now&tag=rose",
		"Bearer bench-token | text/event-stream | c3 | after=now&tag=rose",
		"Bearer bench-token | text/event-stream | c3 | after=now&tag=rose",
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != len(want) {
		t.Fatalf("requests %q, want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("request %d: %q, want %q", i, seen[i], want[i])
		}
	}
}
