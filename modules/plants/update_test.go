package plants

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// send serves one request with a JSON body and the given headers.
func send(api http.Handler, method, target, body string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	api.ServeHTTP(w, req)
	return w
}

func seeded(t *testing.T, plants ...plant.Plant) (http.Handler, plant.Store) {
	t.Helper()
	store := memstore.New()
	for _, p := range plants {
		if _, err := store.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	return newTestAPI(t, store), store
}

func TestUpdate(t *testing.T) {
	api, _ := seeded(t, plant.Plant{ID: 1, Name: "Monstera", Tag: plant.StringPtr("tropical")})
	cases := []struct {
		body   string
		status int
		answer string
	}{
		{`{"name":"Monstera deliciosa","tag":"big"}`, 200, `{"name":"Monstera deliciosa","tag":"big"}`},
		{`{"name":"Monstera"}`, 200, `{"name":"Monstera"}`}, // the tag left out is removed
		{`{"id":1,"name":"with id"}`, 200, `{"name":"with id"}`},
		{`{"id":2,"name":"x"}`, 400, `{"error":400,"message":"\"id\" 2 differs from the path's id 1"}`},
		{`{"tag":"x"}`, 400, `{"error":400,"message":"\"name\" is required"}`},
		{`{"name":null}`, 400, `{"error":400,"message":"\"name\" must be a string, not null"}`},
		{`{"name":"a"} x`, 400, `{"error":400,"message":"request body has data after the JSON object"}`},
		{``, 415, `{"error":415,"message":"Content-Type must be application/json; the request has none"}`},
	}
	for _, c := range cases {
		w := send(api, http.MethodPut, "/plants/1", c.body)
		assertAnswer(t, w, c.status, c.answer)
	}
	assertAnswer(t, serve(api, http.MethodGet, "/plants/1"), 200, `{"id":1,"name":"with id"}`)
	assertAnswer(t, send(api, http.MethodPut, "/plants/2", `{"name":"x"}`), 404, `{"error":404,"message":"plant 2 not found"}`)
	assertAnswer(t, send(api, http.MethodPut, "/plants/01", `{"name":"x"}`), 400, `{"error":400,"message":"path parameter \"id\" must be an integer id in canonical decimal (no '+', no leading zeros, no \"-0\"), not \"01\""}`)
}

// TestUpdateETag: a PUT answers the new ETag, which is the one a GET
// then shows; an update back to the old content gives the old ETag back.
func TestUpdateETag(t *testing.T) {
	p := plant.Plant{ID: 1, Name: "a"}
	api, _ := seeded(t, p)
	first := serve(api, http.MethodGet, "/plants/1").Header().Get("ETag")
	if first != ETag(p) {
		t.Fatalf("GET ETag = %q, want %q", first, ETag(p))
	}
	w := send(api, http.MethodPut, "/plants/1", `{"name":"b"}`, "If-Match", first)
	assertAnswer(t, w, 200, `{"name":"b"}`)
	second := w.Header().Get("ETag")
	if second == first || second != serve(api, http.MethodGet, "/plants/1").Header().Get("ETag") {
		t.Fatalf("PUT ETag %q, first %q: want a new tag that GET shows", second, first)
	}
	// The first tag is stale now: 412, the plant unchanged.
	w = send(api, http.MethodPut, "/plants/1", `{"name":"c"}`, "If-Match", first)
	assertAnswer(t, w, 412, `{"error":412,"message":"plant 1 has changed: If-Match does not match its current ETag"}`)
	assertAnswer(t, serve(api, http.MethodGet, "/plants/1"), 200, `{"id":1,"name":"b"}`)
	w = send(api, http.MethodPut, "/plants/1", `{"name":"a"}`, "If-Match", `"other", `+second)
	assertAnswer(t, w, 200, `{"name":"a"}`)
	if got := w.Header().Get("ETag"); got != first {
		t.Fatalf("ETag of the old content = %q, want %q again", got, first)
	}
}

func TestUpdateIfMatch(t *testing.T) {
	p := plant.Plant{ID: 1, Name: "a"}
	api, _ := seeded(t, p)
	cases := []struct {
		ifMatch string
		status  int
		answer  string
	}{
		{"*", 200, `{"name":"b"}`},
		{`W/` + ETag(plant.Plant{ID: 1, Name: "b"}), 412, `{"error":412,"message":"plant 1 has changed: If-Match does not match its current ETag"}`}, // weak never matches strongly
		{`"nope"`, 412, `{"error":412,"message":"plant 1 has changed: If-Match does not match its current ETag"}`},
		{`nope`, 400, `{"error":400,"message":"If-Match must be \"*\" or a list of entity tags such as \"abc\", not \"nope\""}`},
		{`"a" "b"`, 400, `{"error":400,"message":"If-Match must be \"*\" or a list of entity tags such as \"abc\", not \"\\\"a\\\" \\\"b\\\"\""}`},
		{`,`, 400, `{"error":400,"message":"If-Match must be \"*\" or a list of entity tags such as \"abc\", not \",\""}`},
	}
	for _, c := range cases {
		assertAnswer(t, send(api, http.MethodPut, "/plants/1", `{"name":"b"}`, "If-Match", c.ifMatch), c.status, c.answer)
	}
	// If-Match on a missing plant fails its precondition, "*" included.
	for _, ifMatch := range []string{"*", ETag(p)} {
		assertAnswer(t, send(api, http.MethodPut, "/plants/2", `{"name":"b"}`, "If-Match", ifMatch),
			412, `{"error":412,"message":"plant 2 not found; If-Match requires it to exist"}`)
	}
}

// TestConditionalDelete: DELETE with If-Match removes only the plant the
// client saw.
func TestConditionalDelete(t *testing.T) {
	p := plant.Plant{ID: 1, Name: "a", Tag: plant.StringPtr("t")}
	api, _ := seeded(t, p)
	assertAnswer(t, send(api, http.MethodDelete, "/plants/1", "", "If-Match", `"stale"`),
		412, `{"error":412,"message":"plant 1 has changed: If-Match does not match its current ETag"}`)
	assertAnswer(t, send(api, http.MethodDelete, "/plants/1", "", "If-Match", ETag(p)), 204, ``)
	assertAnswer(t, send(api, http.MethodDelete, "/plants/1", "", "If-Match", "*"),
		412, `{"error":412,"message":"plant 1 not found; If-Match requires it to exist"}`)
	assertAnswer(t, send(api, http.MethodDelete, "/plants/1", ""), 404, `{"error":404,"message":"plant 1 not found"}`)
}

// TestGetIfNoneMatch: the current ETag (or "*", weak or strong) gives 304
// with the ETag and no body; any other a 200.
func TestGetIfNoneMatch(t *testing.T) {
	p := plant.Plant{ID: 1, Name: "a"}
	api, _ := seeded(t, p)
	etag := ETag(p)
	for _, inm := range []string{etag, "W/" + etag, `"x", ` + etag, "*"} {
		w := send(api, http.MethodGet, "/plants/1", "", "If-None-Match", inm)
		if w.Code != http.StatusNotModified || w.Body.Len() != 0 || w.Header().Get("ETag") != etag {
			t.Fatalf("If-None-Match %s: %d %q ETag %q, want 304, no body, ETag %s", inm, w.Code, w.Body, w.Header().Get("ETag"), etag)
		}
	}
	w := send(api, http.MethodGet, "/plants/1", "", "If-None-Match", `"x"`)
	assertAnswer(t, w, 200, `{"id":1,"name":"a"}`)
	assertAnswer(t, send(api, http.MethodGet, "/plants/2", "", "If-None-Match", "*"), 404, `{"error":404,"message":"plant 2 not found"}`)
	assertAnswer(t, send(api, http.MethodGet, "/plants/1", "", "If-None-Match", `x`),
		400, `{"error":400,"message":"If-None-Match must be \"*\" or a list of entity tags such as \"abc\", not \"x\""}`)
}

// TestUpdateStoreFailures: PUT answers an unreachable store 503 with
// Retry-After and any other failure 500, like the other operations.
func TestUpdateStoreFailures(t *testing.T) {
	down := newTestAPI(t, failingStore{err: errors.Join(plant.ErrUnavailable, errors.New("refused"))})
	w := send(down, http.MethodPut, "/plants/1", `{"name":"a"}`)
	assertAnswer(t, w, 503, `{"error":503,"message":"the plant store is unavailable; retry later"}`)
	if w.Header().Get("Retry-After") != "1" {
		t.Fatalf("Retry-After = %q", w.Header().Get("Retry-After"))
	}
	broken := newTestAPI(t, failingStore{err: errors.New("disk on fire")})
	assertAnswer(t, send(broken, http.MethodPut, "/plants/1", `{"name":"a"}`, "If-Match", "*"), 500, `{"error":500,"message":"internal error"}`)
	assertAnswer(t, send(broken, http.MethodDelete, "/plants/1", "", "If-Match", "*"), 500, `{"error":500,"message":"internal error"}`)
}

// TestETagDistinguishesContent: the tag changes with the name or the tag,
// an empty tag differs from none, and name/tag boundaries count.
func TestETagDistinguishesContent(t *testing.T) {
	plants := []plant.Plant{
		{ID: 1, Name: "a"},
		{ID: 1, Name: "a", Tag: plant.StringPtr("")},
		{ID: 1, Name: "ab", Tag: plant.StringPtr("c")},
		{ID: 1, Name: "a", Tag: plant.StringPtr("bc")},
		{ID: 1, Name: ""},
	}
	seen := map[string]int{}
	for i, p := range plants {
		e := ETag(p)
		if j, dup := seen[e]; dup {
			t.Fatalf("plants %d and %d share ETag %s", j, i, e)
		}
		seen[e] = i
		if len(e) != 24 || e[0] != '"' || e[23] != '"' {
			t.Fatalf("ETag %s is not a 22-character quoted tag", e)
		}
	}
	if ETag(plant.Plant{ID: 2, Name: "a"}) != ETag(plants[0]) {
		t.Fatal("the ETag depends on the id; it is a digest of name and tag")
	}
}

// changingStore changes the plant right after each read, as another
// client's write between a handler's read and its write would.
type changingStore struct {
	plant.Store
	n int
}

func (s *changingStore) Get(ctx context.Context, id int64) (plant.Plant, error) {
	p, err := s.Store.Get(ctx, id)
	if err == nil {
		s.n++
		err = s.Replace(ctx, plant.Plant{ID: id, Name: "changed-" + strings.Repeat("x", s.n)}, nil)
	}
	return p, err
}

// TestIfMatchAnyUnderConcurrentChange: "*" asks only that the plant exist,
// so a write that changes it meanwhile does not fail PUT or DELETE with
// 412 (the chaos run found they did); an entity tag still must match.
func TestIfMatchAnyUnderConcurrentChange(t *testing.T) {
	p := plant.Plant{ID: 1, Name: "a"}
	_, inner := seeded(t, p)
	api := newTestAPI(t, &changingStore{Store: inner})
	assertAnswer(t, send(api, http.MethodPut, "/plants/1", `{"name":"b"}`, "If-Match", ETag(plant.Plant{ID: 1, Name: "b"})),
		412, `{"error":412,"message":"plant 1 has changed: If-Match does not match its current ETag"}`)
	assertAnswer(t, send(api, http.MethodPut, "/plants/1", `{"name":"b"}`, "If-Match", "*"), 200, `{"name":"b"}`)
	assertAnswer(t, send(api, http.MethodDelete, "/plants/1", "", "If-Match", "*"), 204, ``)
}
