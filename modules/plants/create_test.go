package plants

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// newCreateHandler returns the POST /plants handler over store, and its
// plants-created counter.
func newCreateHandler(t *testing.T, store plant.Store, log *zap.Logger) (http.Handler, prometheus.Counter) {
	t.Helper()
	h, err := NewHandlers(store, nil, DefaultMaxBodyBytes, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range h.Routes() {
		if rt.Method == http.MethodPost && rt.Path == "/plants" {
			return rt.Handler, h.created
		}
	}
	t.Fatal("no POST /plants route")
	return nil, nil
}

func postPlant(h http.Handler, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestCreate(t *testing.T) {
	store := memstore.New()
	h, created := newCreateHandler(t, store, zap.NewNop())
	for _, step := range []struct {
		body, answer string
		status       int
	}{
		{`{"id":1,"name":"Monstera","tag":"tropical"}`, `{"name":"Monstera","tag":"tropical"}`, http.StatusOK},
		{`{"id":2,"name":"Ficus"}`, `{"name":"Ficus"}`, http.StatusOK},
		{`{"id":3,"name":"","tag":""}`, `{"name":"","tag":""}`, http.StatusOK},
		{`{"name":"Monstera","id":1,"tag":"tropical","extra":1}`, `{"name":"Monstera","tag":"tropical"}`, http.StatusOK}, // identical re-create
		{`{"id":1,"name":"Monstera"}`, `{"error":409,"message":"plant 1 already exists with a different name or tag"}`, http.StatusConflict},
		{`{"id":2,"name":"Ficus","tag":""}`, `{"error":409,"message":"plant 2 already exists with a different name or tag"}`, http.StatusConflict},
		{`{"id":1,"name":"monstera","tag":"tropical"}`, `{"error":409,"message":"plant 1 already exists with a different name or tag"}`, http.StatusConflict},
		{`{"id":1}`, `{"error":400,"message":"\"name\" is required"}`, http.StatusBadRequest},
	} {
		rec := postPlant(h, step.body)
		if rec.Code != step.status || rec.Body.String() != step.answer || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("POST %s = %d %q %s; want %d application/json %s",
				step.body, rec.Code, rec.Header().Get("Content-Type"), rec.Body, step.status, step.answer)
		}
	}
	if got := testutil.ToFloat64(created); got != 3 {
		t.Fatalf("plantstore_plants_created_total = %v, want 3: the new plants, not the identical re-create", got)
	}
	for id, want := range map[int64]plant.Plant{
		1: {ID: 1, Name: "Monstera", Tag: plant.StringPtr("tropical")},
		2: {ID: 2, Name: "Ficus"},
		3: {ID: 3, Name: "", Tag: plant.StringPtr("")},
	} {
		got, err := store.Get(context.Background(), id)
		if err != nil || !got.Equal(want) {
			t.Fatalf("store.Get(%d) = %s, %v; want %s", id, show(got), err, show(want))
		}
	}
}

// Create fails like the rest of failingStore (handlers_test.go): the only
// way to see how the handler answers a store that is down or broken.
func (s failingStore) Create(context.Context, plant.Plant) (plant.CreateResult, error) {
	return 0, s.err
}

func TestCreateStoreFailures(t *testing.T) {
	for _, tc := range []struct {
		name       string
		err        error
		status     int
		message    string
		retryAfter string
		logged     string // the log line's message; "" for none
	}{
		{name: "conflict", err: fmt.Errorf("tx: %w", plant.ErrConflict), status: http.StatusConflict,
			message: "plant 7 already exists with a different name or tag"},
		{name: "unavailable", err: fmt.Errorf("dial tcp 10.0.0.1:5432: %w", plant.ErrUnavailable), status: http.StatusServiceUnavailable,
			message: "the plant store is unavailable; retry later", retryAfter: "1", logged: "store unavailable"},
		{name: "other failure", err: errors.New("disk on fire at /var/lib/secret"), status: http.StatusInternalServerError,
			message: "internal error", logged: "store failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zap.DebugLevel)
			h, created := newCreateHandler(t, failingStore{err: tc.err}, zap.New(core))
			rec := postPlant(h, `{"id":7,"name":"a"}`)
			assertErrorRecorded(t, rec, tc.status, tc.message)
			if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Fatalf("Retry-After = %q, want %q", got, tc.retryAfter)
			}
			if testutil.ToFloat64(created) != 0 {
				t.Fatal("a failed create was counted as created")
			}
			entries := logs.All()
			if tc.logged == "" {
				if len(entries) != 0 {
					t.Fatalf("logged %v, want nothing", entries)
				}
				return
			}
			// The detail the client does not see goes to the log.
			if len(entries) != 1 || entries[0].Message != tc.logged || entries[0].ContextMap()["error"] != tc.err.Error() {
				t.Fatalf("log = %+v, want one %q line with the error", entries, tc.logged)
			}
		})
	}
}
