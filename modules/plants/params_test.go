package plants

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

func TestIsCanonicalInt(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "7": true, "-7": true, "10": true, "9223372036854775807": true, "-9223372036854775808": true,
		"99999999999999999999": true, // canonical, if outside int64: the range is checked after
		"":                     false, "-": false, "-0": false, "00": false, "007": false, "-07": false, "+5": false, "+0": false,
		" 5": false, "5 ": false, "1_000": false, "0x10": false, "1.0": false, "1e2": false, "--5": false, "٣": false,
	} {
		if got := isCanonicalInt(s); got != want {
			t.Errorf("isCanonicalInt(%q) = %v, want %v", s, got, want)
		}
	}
}

// untouchedStore fails the test if any of its methods is called: a bad
// parameter must be refused before a store sees it.
type untouchedStore struct {
	plant.Store
	t *testing.T
}

func (s untouchedStore) Get(context.Context, int64) (plant.Plant, error) {
	s.t.Error("Get called")
	return plant.Plant{}, plant.ErrNotFound
}

func (s untouchedStore) List(context.Context, plant.ListQuery) ([]plant.Plant, error) {
	s.t.Error("List called")
	return nil, nil
}

func (s untouchedStore) Delete(context.Context, int64) error {
	s.t.Error("Delete called")
	return plant.ErrNotFound
}

// TestBadParametersNeverReachTheStore: a query parameter or path id that
// PostgreSQL's text cannot hold (invalid UTF-8, U+0000), or an integer that
// is not in canonical decimal, is a 400 naming the parameter, decided
// before any store is called, on every operation that takes one.
func TestBadParametersNeverReachTheStore(t *testing.T) {
	const canonical = ` in canonical decimal (no '+', no leading zeros, no "-0"), not `
	const limitWant = `query parameter "limit" must be an integer from 1 to 1000`
	list := []struct{ query, message string }{
		{"tag=%ff", `query parameter "tag" is not valid UTF-8`},
		{"tag=fern%C3", `query parameter "tag" is not valid UTF-8`},
		{"tag=%ED%A0%80", `query parameter "tag" is not valid UTF-8`}, // a UTF-16 surrogate
		{"tag=%00", `query parameter "tag" must not contain the character U+0000`},
		{"tag=a%00b", `query parameter "tag" must not contain the character U+0000`},
		{"limit=%ff", `query parameter "limit" is not valid UTF-8`},
		{"limit=5%00", `query parameter "limit" must not contain the character U+0000`},
		{"after=%FF", `query parameter "after" is not valid UTF-8`},
		{"after=%00", `query parameter "after" must not contain the character U+0000`},
		{"limit=0001", limitWant + canonical + `"0001"`},
		{"limit=%2B5", limitWant + canonical + `"+5"`},
		{"limit=-0", limitWant + canonical + `"-0"`},
		{"limit=00", limitWant + canonical + `"00"`},
		{"after=%2B4", `query parameter "after" must be an integer id` + canonical + `"+4"`},
		{"after=007", `query parameter "after" must be an integer id` + canonical + `"007"`},
		{"after=-0", `query parameter "after" must be an integer id` + canonical + `"-0"`},
		{"after=-05", `query parameter "after" must be an integer id` + canonical + `"-05"`},
		{"after=000000000000000000000001", `query parameter "after" must be an integer id` + canonical + `"000000000000000000000001"`},
		{"after=1&tag=%ff", `query parameter "tag" is not valid UTF-8`},
	}
	ids := []struct{ id, message string }{
		{"%ff", `path parameter "id" is not valid UTF-8`},
		{"1%ff", `path parameter "id" is not valid UTF-8`},
		{"%00", `path parameter "id" must not contain the character U+0000`},
		{"1%00", `path parameter "id" must not contain the character U+0000`},
		{"+5", `path parameter "id" must be an integer id` + canonical + `"+5"`},
		{"%2B5", `path parameter "id" must be an integer id` + canonical + `"+5"`},
		{"005", `path parameter "id" must be an integer id` + canonical + `"005"`},
		{"-0", `path parameter "id" must be an integer id` + canonical + `"-0"`},
		{"00", `path parameter "id" must be an integer id` + canonical + `"00"`},
		{"-", `path parameter "id" must be an integer id, not "-"`},
	}
	api := newTestAPI(t, untouchedStore{t: t})
	for _, c := range list {
		t.Run("GET /plants?"+c.query, func(t *testing.T) {
			assertErrorRecorded(t, serve(api, http.MethodGet, "/plants?"+c.query), http.StatusBadRequest, c.message)
		})
	}
	for _, c := range ids {
		for _, method := range []string{http.MethodGet, http.MethodDelete} {
			t.Run(method+" /plants/"+c.id, func(t *testing.T) {
				assertErrorRecorded(t, serve(api, method, "/plants/"+c.id), http.StatusBadRequest, c.message)
			})
		}
	}
}

// The canonical forms still reach the store.
func TestCanonicalParametersReachTheStore(t *testing.T) {
	store := &recordingStore{Store: failingStore{err: plant.ErrNotFound}}
	api := newTestAPI(t, store)
	for _, target := range []string{"/plants?limit=1&after=0", "/plants?after=-5&limit=1000", "/plants?tag=%F0%9F%8C%B1"} {
		if w := serve(api, http.MethodGet, target); w.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d %s, want the store's 404", target, w.Code, w.Body)
		}
	}
	if len(store.queries) != 3 {
		t.Fatalf("the store was asked %d queries, want 3", len(store.queries))
	}
	for _, target := range []string{"/plants/0", "/plants/-9223372036854775808", "/plants/10"} {
		w := httptest.NewRecorder()
		api.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
		if w.Code != http.StatusNotFound {
			t.Errorf("GET %s = %d %s, want the store's 404", target, w.Code, w.Body)
		}
	}
}
