package plants

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/auth/principal"
	httpserver "github.com/plantstore/plantstore/modules/httpserver"
	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// newBulkServer serves the create and the import of store on a real
// loopback socket (the import streams both ways, which a recorder cannot
// show), with a line cap of maxLine and a stream cap of maxStream.
func newBulkServer(t *testing.T, store plant.Store, maxLine, maxStream int64) *httptest.Server {
	t.Helper()
	h, err := NewHandlers(store, nil, maxLine, prometheus.NewRegistry(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	im := NewImporter(h, maxStream, 0, 0)
	rt := httpserver.NewRouter(append(h.Routes(), im.Routes()...))
	srv := httptest.NewServer(rt.Resolve(rt.Dispatch()))
	t.Cleanup(srv.Close)
	return srv
}

// postImport sends body to the import and returns the status, the
// Content-Type and the whole answer.
func postImport(t *testing.T, srv *httptest.Server, contentType, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+importPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// singleCreateRefusal is the message POST /plants answers 400 with for body.
func singleCreateRefusal(t *testing.T, srv *httptest.Server, body string) string {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+"/plants", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("POST /plants %s = %d %s, want 400", body, resp.StatusCode, b)
	}
	prefix := `{"error":400,"message":`
	if !strings.HasPrefix(string(b), prefix) {
		t.Fatalf("POST /plants %s = %s, not an Error", body, b)
	}
	return string(b)
}

// TestBulkImportAnswersEachLineInOrder: one result per line that is not
// blank, in the lines' order: created, unchanged, a conflict with the
// stored plant and its ETag, and each bad line refused with the Error the
// single create gives, "request body" read "the line" and the line's
// number in front; a bad line does not stop the stream.
func TestBulkImportAnswersEachLineInOrder(t *testing.T) {
	store := memstore.New()
	if _, err := store.Create(context.Background(), plant.Plant{ID: 9, Name: "stored", Tag: plant.StringPtr("s")}); err != nil {
		t.Fatal(err)
	}
	srv := newBulkServer(t, store, DefaultMaxBodyBytes, defaultMaxImportBytes)

	bad := []string{
		`{"id":3,"name":"caf` + "\xe9" + `"}`,
		`{"id":3,"name":"a","name":"b"}`,
		`{"id":3,"Name":"a"}`,
		`{"id":"3","name":"a"}`,
		`{"id":3.5,"name":"c"}`,
		`{"id":3,"name":"c","tag":null}`,
		`[1]`,
		`{"id":3,"name":"c"} {"id":4,"name":"d"}`,
		`{"id":3,"name":"` + strings.Repeat("x", 1025) + `"}`,
		`{"id":4,"name":"d"`,
	}
	lines := []string{`{"id":1,"name":"one"}`, `{"id":1,"name":"one"}`, "", " \t\r", `{"id":9,"name":"other"}`}
	lines = append(lines, bad...)
	lines = append(lines, `{"id":-2,"name":"two","tag":"","colour":"red"}`+"\r")
	body := strings.Join(lines, "\n") // the last line without a newline

	var want strings.Builder
	want.WriteString(`{"line":1,"id":1,"result":"created"}` + "\n")
	want.WriteString(`{"line":2,"id":1,"result":"unchanged"}` + "\n")
	fmt.Fprintf(&want, `{"line":5,"id":9,"result":"conflict","stored":{"id":9,"name":"stored","tag":"s"},"etag":%q}`+"\n",
		ETag(plant.Plant{ID: 9, Name: "stored", Tag: plant.StringPtr("s")}))
	for i, b := range bad {
		line := 6 + i
		single := singleCreateRefusal(t, srv, b)
		msg := strings.TrimPrefix(single, `{"error":400,"message":"`)
		msg = strings.Replace(msg, "request body", "the line", 1)
		fmt.Fprintf(&want, `{"line":%d,"result":"refused","error":{"error":400,"message":"line %d: %s}`+"\n", line, line, msg)
	}
	fmt.Fprintf(&want, `{"line":%d,"id":-2,"result":"created"}`+"\n", 6+len(bad))

	status, ct, got := postImport(t, srv, "application/x-ndjson", body)
	if status != http.StatusOK || ct != ndjsonContentType || got != want.String() {
		t.Fatalf("import = %d %q\n%s\nwant 200 %q\n%s", status, ct, got, ndjsonContentType, want.String())
	}
	for _, id := range []int64{1, -2} {
		if _, err := store.Get(context.Background(), id); err != nil {
			t.Fatalf("plant %d: %v", id, err)
		}
	}
	if p, _ := store.Get(context.Background(), 9); p.Name != "stored" {
		t.Fatalf("the conflict changed plant 9: %+v", p)
	}
}

// TestBulkImportFramingErrorsEndTheStream: a line over the single create's
// body cap, or a stream over its own cap, ends the stream with a last line
// that is an Error, after the results of the lines before it; nothing
// after it is created.
func TestBulkImportFramingErrorsEndTheStream(t *testing.T) {
	t.Run("line over the cap", func(t *testing.T) {
		store := memstore.New()
		srv := newBulkServer(t, store, 32, defaultMaxImportBytes)
		exact := `{"id":1,"name":"` + strings.Repeat("x", 32-len(`{"id":1,"name":""}`)) + `"}` // 32 bytes
		body := exact + "\n" + `{"id":2,"name":"` + strings.Repeat("x", 32) + `"}` + "\n" + `{"id":3,"name":"c"}` + "\n"
		status, _, got := postImport(t, srv, "application/x-ndjson", body)
		want := `{"line":1,"id":1,"result":"created"}` + "\n" +
			`{"error":413,"message":"line 2 is longer than the limit of 32 bytes; the stream ends here"}` + "\n"
		if status != http.StatusOK || got != want {
			t.Fatalf("import = %d\n%s\nwant 200\n%s", status, got, want)
		}
		if _, err := store.Get(context.Background(), 3); !errors.Is(err, plant.ErrNotFound) {
			t.Fatalf("plant 3 after the framing error: %v", err)
		}
	})
	t.Run("stream over the cap", func(t *testing.T) {
		store := memstore.New()
		first := `{"id":1,"name":"a"}` + "\n"
		srv := newBulkServer(t, store, DefaultMaxBodyBytes, int64(len(first)+5))
		status, _, got := postImport(t, srv, "application/x-ndjson", first+`{"id":2,"name":"b"}`+"\n")
		want := `{"line":1,"id":1,"result":"created"}` + "\n" +
			fmt.Sprintf(`{"error":413,"message":"the stream is larger than the limit of %d bytes; it ends before line 2"}`, len(first)+5) + "\n"
		if status != http.StatusOK || got != want {
			t.Fatalf("import = %d\n%s\nwant 200\n%s", status, got, want)
		}
	})
}

// TestBulkImportRefusesOtherBodies: the import takes NDJSON only, declared
// once, in UTF-8 and without a content coding, as the create takes JSON.
func TestBulkImportRefusesOtherBodies(t *testing.T) {
	srv := newBulkServer(t, memstore.New(), DefaultMaxBodyBytes, defaultMaxImportBytes)
	for ct, want := range map[string]string{
		"application/json": `{"error":415,"message":"Content-Type must be application/x-ndjson, not \"application/json\""}`,
		"":                 `{"error":415,"message":"Content-Type must be application/x-ndjson; the request has none"}`,
		"application/x-ndjson; charset=iso-8859-1": `{"error":415,"message":"the body must be UTF-8, not charset \"iso-8859-1\"; send it in UTF-8 as application/x-ndjson"}`,
		"application/x-ndjson; charset=UTF-16":     `{"error":415,"message":"the body must be UTF-8, not charset \"UTF-16\"; send it in UTF-8 as application/x-ndjson"}`,
	} {
		status, gotCT, got := postImport(t, srv, ct, `{"id":1,"name":"a"}`)
		if status != http.StatusUnsupportedMediaType || gotCT != "application/json" || got != want {
			t.Fatalf("Content-Type %q: %d %q %s, want 415 %s", ct, status, gotCT, got, want)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+importPath, strings.NewReader(`{"id":1,"name":"a"}`))
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `{"error":415,"message":"Content-Encoding \"gzip\" is not supported; send the body without a content coding"}`; resp.StatusCode != http.StatusUnsupportedMediaType || string(b) != want {
		t.Fatalf("gzip: %d %s, want 415 %s", resp.StatusCode, b, want)
	}
}

// gateStore holds every create until open is closed, counting those it
// holds.
type gateStore struct {
	plant.Store
	open chan struct{}
	mu   sync.Mutex
	held int
}

func (s *gateStore) Create(ctx context.Context, p plant.Plant) (plant.CreateResult, error) {
	s.mu.Lock()
	s.held++
	s.mu.Unlock()
	<-s.open
	return s.Store.Create(ctx, p)
}

// TestBulkImportFeedsTheStoreConcurrently: the creates of one stream run
// at once, exactly the window of them when the store stalls, and the
// results still come in the lines' order. Under synctest, the moment
// every goroutine waits (the creates at the store, the reader on a full
// window) is exact; the handler is called directly since a socket would
// not let the bubble settle.
func TestBulkImportFeedsTheStoreConcurrently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &gateStore{Store: memstore.New(), open: make(chan struct{})}
		h, err := NewHandlers(store, nil, DefaultMaxBodyBytes, prometheus.NewRegistry(), zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		const n = 3000
		var body, want strings.Builder
		for i := range n {
			fmt.Fprintf(&body, `{"id":%d,"name":"p%d"}`+"\n", n-i, i)
			fmt.Fprintf(&want, `{"line":%d,"id":%d,"result":"created"}`+"\n", i+1, n-i)
		}
		req := httptest.NewRequest(http.MethodPost, importPath, strings.NewReader(body.String()))
		req.Header.Set("Content-Type", ndjsonContentType)
		rec := httptest.NewRecorder()
		served := make(chan struct{})
		go func() {
			defer close(served)
			NewImporter(h, 0, 0, 0).serve(rec, req)
		}()

		synctest.Wait()
		store.mu.Lock()
		held := store.held
		store.mu.Unlock()
		if held != importWindow {
			t.Errorf("%d creates in flight when the store stalls, want the window, %d", held, importWindow)
		}
		close(store.open)
		<-served
		if rec.Code != http.StatusOK || rec.Body.String() != want.String() {
			t.Fatalf("import = %d, %d bytes; want the %d results in order", rec.Code, rec.Body.Len(), n)
		}
	})
}

// TestBulkImportRequiresWriteScope: the import creates, so it needs the
// create's scope.
func TestBulkImportRequiresWriteScope(t *testing.T) {
	h, err := NewHandlers(memstore.New(), nil, DefaultMaxBodyBytes, prometheus.NewRegistry(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	routes := NewImporter(h, 0, 0, 0).Routes()
	if len(routes) != 1 || routes[0].Method != http.MethodPost || routes[0].Path != "/plants:import" ||
		routes[0].Requires != principal.ScopePlantsWrite {
		t.Fatalf("routes %+v, want POST /plants:import requiring %s", routes, principal.ScopePlantsWrite)
	}
}

// batchStore is a store that creates in batches, over memstore's single
// creates: it records each batch's ids.
type batchStore struct {
	plant.Store
	mu      sync.Mutex
	batches [][]int64
}

func (s *batchStore) CreateBatch(ctx context.Context, ps []plant.Plant) ([]plant.BatchResult, error) {
	s.mu.Lock()
	ids := make([]int64, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	s.batches = append(s.batches, ids)
	s.mu.Unlock()
	results := make([]plant.BatchResult, len(ps))
	for i, p := range ps {
		res, err := s.Create(ctx, p)
		results[i] = plant.BatchResult{Result: res, Err: err}
		if errors.Is(err, plant.ErrConflict) {
			results[i].Stored, _ = s.Get(ctx, p.ID)
		}
	}
	return results, nil
}

// TestBulkImportBatchesHoldEachIDOnce: a store that creates in batches
// gets the lines queued while its last batch committed, in their order,
// each id at most once a batch: a line repeating an id of the batch waits
// for the next, so that of two lines with one id the first is created and
// the second answered as a create after it.
func TestBulkImportBatchesHoldEachIDOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { // no socket: the handler alone, in a bubble that ends with it
		store := &batchStore{Store: memstore.New()}
		h, err := NewHandlers(store, nil, DefaultMaxBodyBytes, prometheus.NewRegistry(), zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		body := strings.Join([]string{
			`{"id":1,"name":"a"}`, `{"id":2,"name":"b"}`, `{"id":1,"name":"a"}`, `{"id":3,"name":"c"}`,
			`{"id":1,"name":"z"}`, `[]`, `{"id":1,"name":"a"}`,
		}, "\n")
		req := httptest.NewRequest(http.MethodPost, importPath, strings.NewReader(body))
		req.Header.Set("Content-Type", ndjsonContentType)
		rec := httptest.NewRecorder()
		served := make(chan struct{})
		go func() {
			defer close(served)
			NewImporter(h, 0, 0, 0).serve(rec, req)
		}()
		<-served

		a := plant.Plant{ID: 1, Name: "a"}
		want := `{"line":1,"id":1,"result":"created"}` + "\n" +
			`{"line":2,"id":2,"result":"created"}` + "\n" +
			`{"line":3,"id":1,"result":"unchanged"}` + "\n" +
			`{"line":4,"id":3,"result":"created"}` + "\n" +
			fmt.Sprintf(`{"line":5,"id":1,"result":"conflict","stored":{"id":1,"name":"a"},"etag":%q}`, ETag(a)) + "\n" +
			`{"line":6,"result":"refused","error":{"error":400,"message":"line 6: the line must be a JSON object, not an array"}}` + "\n" +
			`{"line":7,"id":1,"result":"unchanged"}` + "\n"
		if rec.Code != http.StatusOK || rec.Body.String() != want {
			t.Fatalf("import = %d\n%s\nwant 200\n%s", rec.Code, rec.Body.String(), want)
		}
		// Where the first batch ends depends on which goroutine ran
		// first; that no batch holds an id twice, and that every plant
		// line went to one, does not.
		var ones, all int
		for _, b := range store.batches {
			seen := map[int64]bool{}
			for _, id := range b {
				if seen[id] {
					t.Fatalf("batches %v: id %d twice in one", store.batches, id)
				}
				seen[id] = true
				all++
				if id == 1 {
					ones++
				}
			}
		}
		if all != 6 || ones != 4 || len(store.batches) < 4 {
			t.Fatalf("batches %v, want the 6 plant lines, id 1's four in four batches", store.batches)
		}
	})
}
