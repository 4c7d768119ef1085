package plants

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	httpserver "github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// newTestAPI serves the handlers' routes and the feed's (without a change
// log) through the real router, so that path variables and 405s behave as
// in the program.
func newTestAPI(tb testing.TB, store plant.Store) http.Handler {
	tb.Helper()
	h, err := NewHandlers(store, nil, DefaultMaxBodyBytes, prometheus.NewRegistry(), zap.NewNop())
	if err != nil {
		tb.Fatal(err)
	}
	rt := httpserver.NewRouter(append(h.Routes(), NewFeed(nil, nil, zap.NewNop()).Routes()...))
	return rt.Resolve(rt.Dispatch())
}

// serve sends method target to api and returns the recorded answer.
func serve(api http.Handler, method, target string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	api.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w
}

// assertAnswer checks the status, content type and exact body of an answer.
func assertAnswer(t *testing.T, w *httptest.ResponseRecorder, status int, body string) {
	t.Helper()
	if w.Code != status || w.Body.String() != body {
		t.Fatalf("answer = %d %s, want %d %s", w.Code, w.Body, status, body)
	}
	wantType := "application/json"
	if status == http.StatusNoContent {
		wantType = ""
	}
	if ct := w.Header().Get("Content-Type"); ct != wantType {
		t.Fatalf("Content-Type = %q, want %q", ct, wantType)
	}
}

// failingStore fails every call with err.
type failingStore struct {
	plant.Store
	err error
}

func (s failingStore) Get(context.Context, int64) (plant.Plant, error) { return plant.Plant{}, s.err }
func (s failingStore) List(context.Context, plant.ListQuery) ([]plant.Plant, error) {
	return nil, s.err
}
func (s failingStore) Delete(context.Context, int64) error { return s.err }
func (s failingStore) Replace(context.Context, plant.Plant, *plant.Plant) error {
	return s.err
}
func (s failingStore) DeleteMatching(context.Context, plant.Plant) error { return s.err }

// TestStoreFailures: an unreachable store is a 503 with Retry-After, any
// other failure a 500 whose message gives nothing of the cause away.
func TestStoreFailures(t *testing.T) {
	requests := []struct{ method, target string }{
		{http.MethodGet, "/plants"},
		{http.MethodGet, "/plants/1"},
		{http.MethodDelete, "/plants/1"},
	}
	for _, req := range requests {
		t.Run(req.method+" "+req.target, func(t *testing.T) {
			down := newTestAPI(t, failingStore{err: errors.Join(plant.ErrUnavailable, errors.New("dial tcp: refused"))})
			w := serve(down, req.method, req.target)
			assertAnswer(t, w, http.StatusServiceUnavailable, `{"error":503,"message":"the plant store is unavailable; retry later"}`)
			if got := w.Header().Get("Retry-After"); got != "1" {
				t.Fatalf("Retry-After = %q, want 1", got)
			}
			broken := newTestAPI(t, failingStore{err: errors.New("disk on fire")})
			assertAnswer(t, serve(broken, req.method, req.target), http.StatusInternalServerError, `{"error":500,"message":"internal error"}`)
		})
	}
}

// TestMethodNotAllowed: the router lists every method of a path in Allow.
func TestMethodNotAllowed(t *testing.T) {
	api := newTestAPI(t, nil)
	for target, allow := range map[string]string{
		"/plants":         "GET, HEAD, POST",
		"/plants/1":       "DELETE, GET, HEAD, PUT",
		"/plants/abc":     "DELETE, GET, HEAD, PUT",
		"/plants/changes": "GET, HEAD",
	} {
		w := serve(api, http.MethodPatch, target)
		if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != allow {
			t.Errorf("PATCH %s = %d Allow %q, want 405 Allow %q", target, w.Code, w.Header().Get("Allow"), allow)
		}
	}
}

// TestClientGoneIsNotAServerError: a client that disconnects while the store
// works (the store returns the request context's error) is answered 499,
// not counted as a 500.
func TestClientGoneIsNotAServerError(t *testing.T) {
	api := newTestAPI(t, failingStore{err: context.Canceled})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/plants", strings.NewReader(`{"id":1,"name":"a"}`))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	api.ServeHTTP(w, req)
	assertAnswer(t, w, statusClientClosedRequest, `{"error":499,"message":"the client closed the request"}`)

	// The same error while the client is still there is the store's failure.
	w = serve(newTestAPI(t, failingStore{err: context.Canceled}), http.MethodGet, "/plants/1")
	assertAnswer(t, w, http.StatusInternalServerError, `{"error":500,"message":"internal error"}`)
}
