package client

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	httpserver "github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// newImportServer serves the real plants routes, the import's included,
// over store on loopback, with a line cap of maxLine.
func newImportServer(t *testing.T, store plant.Store, maxLine int64) *httptest.Server {
	t.Helper()
	h, err := plants.NewHandlers(store, nil, maxLine, prometheus.NewRegistry(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	rt := httpserver.NewRouter(append(h.Routes(), plants.NewImporter(h, 0, 0, 0).Routes()...))
	srv := httptest.NewServer(rt.Resolve(rt.Dispatch()))
	t.Cleanup(srv.Close)
	return srv
}

// TestImportYieldsEachResult: one result per plant, in order: created,
// conflict with the stored plant and its ETag, unchanged. The client's
// timeout does not cut the stream (here one of a nanosecond).
func TestImportYieldsEachResult(t *testing.T) {
	store := memstore.New()
	stored := plant.Plant{ID: 2, Name: "stored", Tag: plant.StringPtr("s")}
	if _, err := store.Create(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	srv := newImportServer(t, store, plants.DefaultMaxBodyBytes)
	c, err := New(srv.URL, WithHTTPClient(&http.Client{Timeout: time.Nanosecond}))
	if err != nil {
		t.Fatal(err)
	}
	tag := "t"
	sent := []Plant{{ID: 1, Name: "one"}, {ID: 2, Name: "two"}, {ID: 1, Name: "one"}, {ID: 3, Name: "three", Tag: &tag}}
	var got []string
	for r, err := range c.Import(context.Background(), slices.Values(sent)) {
		if err != nil {
			t.Fatal(err)
		}
		s := r.Result
		if r.Stored != nil {
			s += " " + r.Stored.Name + " " + *r.Stored.Tag + " " + r.Stored.ETag
		}
		got = append(got, s)
		if r.Line != len(got) || r.ID != sent[r.Line-1].ID {
			t.Fatalf("result %d is line %d, id %d", len(got), r.Line, r.ID)
		}
	}
	want := []string{ImportCreated, ImportConflict + " stored s " + plants.ETag(stored), ImportUnchanged, ImportCreated}
	if !slices.Equal(got, want) {
		t.Fatalf("results %q, want %q", got, want)
	}
}

// TestImportResultsFlowWhileSending: the first plant's result arrives
// before the second plant is sent, so a client may pace what it sends on
// what is committed (both ends stream at once).
func TestImportResultsFlowWhileSending(t *testing.T) {
	srv := newImportServer(t, memstore.New(), plants.DefaultMaxBodyBytes)
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	firstResult := make(chan struct{})
	send := func(yield func(Plant) bool) {
		if !yield(Plant{ID: 1, Name: "one"}) {
			return
		}
		select {
		case <-firstResult:
		case <-time.After(30 * time.Second):
			t.Error("no result for the first plant while the stream was still open")
		}
		yield(Plant{ID: 2, Name: "two"})
	}
	n := 0
	for r, err := range c.Import(context.Background(), send) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 1 {
			close(firstResult)
		}
		if r.Result != ImportCreated || r.Line != n {
			t.Fatalf("result %d: %+v", n, r)
		}
	}
	if n != 2 {
		t.Fatalf("%d results, want 2", n)
	}
}

// TestImportErrors: a server without the bulk create is
// ErrImportUnsupported; a stream the server ends early yields its Error
// after the results before it.
func TestImportErrors(t *testing.T) {
	t.Run("unsupported", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":404,"message":"no such path: /plants:import"}`))
		}))
		t.Cleanup(srv.Close)
		c, err := New(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		for _, err := range c.Import(context.Background(), slices.Values([]Plant{{ID: 1, Name: "a"}})) {
			if !errors.Is(err, ErrImportUnsupported) {
				t.Fatalf("err = %v, want ErrImportUnsupported", err)
			}
		}
	})
	t.Run("line over the cap", func(t *testing.T) {
		srv := newImportServer(t, memstore.New(), 40)
		c, err := New(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		var results []string
		var last error
		for r, err := range c.Import(context.Background(), slices.Values([]Plant{{ID: 1, Name: "a"}, {ID: 2, Name: strings.Repeat("b", 40)}, {ID: 3, Name: "c"}})) {
			if err != nil {
				last = err
				continue
			}
			results = append(results, r.Result)
		}
		var apiErr *Error
		if !errors.As(last, &apiErr) || apiErr.Status != http.StatusRequestEntityTooLarge ||
			apiErr.Message != "line 2 is longer than the limit of 40 bytes; the stream ends here" {
			t.Fatalf("err = %v, want the 413 that ends the stream", last)
		}
		if !slices.Equal(results, []string{ImportCreated}) {
			t.Fatalf("results %q before the error, want [created]", results)
		}
	})
}
