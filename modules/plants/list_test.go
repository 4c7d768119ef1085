package plants

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

func TestParseListQuery(t *testing.T) {
	ptr := func(v int64) *int64 { return &v }
	ok := []struct {
		raw  string
		want plant.ListQuery
	}{
		{"", plant.ListQuery{Limit: 100}},
		{"limit=1", plant.ListQuery{Limit: 1}},
		{"limit=1000", plant.ListQuery{Limit: 1000}},
		{"after=-9223372036854775808", plant.ListQuery{Limit: 100, After: ptr(math.MinInt64)}},
		{"after=9223372036854775807&limit=5", plant.ListQuery{Limit: 5, After: ptr(math.MaxInt64)}},
		{"after=0", plant.ListQuery{Limit: 100, After: ptr(0)}},
		{"tag=tropical", plant.ListQuery{Limit: 100, Tag: plant.StringPtr("tropical")}},
		{"tag=", plant.ListQuery{Limit: 100, Tag: plant.StringPtr("")}}, // the empty tag, not "no filter"
		{"tag=a+b%26c%3D", plant.ListQuery{Limit: 100, Tag: plant.StringPtr("a b&c=")}},
		{"tag=%F0%9F%8C%B1", plant.ListQuery{Limit: 100, Tag: plant.StringPtr("🌱")}},
		// Unknown parameters are ignored, repeated or not, with or without a value.
		{"foo=bar&limit=3&foo=baz&x&LIMIT=abc&offset=7", plant.ListQuery{Limit: 3}},
	}
	for _, c := range ok {
		got, err := parseListQuery(c.raw)
		if err != nil || !sameQuery(got, c.want) {
			t.Errorf("parseListQuery(%q) = %s, %v; want %s", c.raw, showQuery(got), err, showQuery(c.want))
		}
	}

	bad := []struct{ raw, msg string }{
		{"limit=0", `query parameter "limit" must be from 1 to 1000, not 0`},
		{"limit=-1", `query parameter "limit" must be from 1 to 1000, not -1`},
		{"limit=1001", `query parameter "limit" must be from 1 to 1000, not 1001`},
		{"limit=2147483648", `query parameter "limit" must be from 1 to 1000, not 2147483648`},
		{"limit=99999999999999999999", `query parameter "limit" must be from 1 to 1000, not 99999999999999999999`},
		{"limit=abc", `query parameter "limit" must be an integer from 1 to 1000, not "abc"`},
		{"limit=", `query parameter "limit" must be an integer from 1 to 1000, not ""`},
		{"limit", `query parameter "limit" must be an integer from 1 to 1000, not ""`},
		{"limit=1.5", `query parameter "limit" must be an integer from 1 to 1000, not "1.5"`},
		{"limit=+5", `query parameter "limit" must be an integer from 1 to 1000, not " 5"`}, // '+' is a space in a query
		{"limit=1&limit=2", `query parameter "limit" is given 2 times; give it at most once`},
		{"limit=5&limit=5&limit=5", `query parameter "limit" is given 3 times; give it at most once`},
		{"after=abc", `query parameter "after" must be an integer id, not "abc"`},
		{"after=", `query parameter "after" must be an integer id, not ""`},
		{"after=9223372036854775808", `query parameter "after" 9223372036854775808 is outside the int64 range`},
		{"after=-9223372036854775809", `query parameter "after" -9223372036854775809 is outside the int64 range`},
		{"after=" + strings.Repeat("x", 70), `query parameter "after" must be an integer id, not "` + strings.Repeat("x", 64) + `…"`},
		{"after=" + strings.Repeat("é", 40), `query parameter "after" must be an integer id, not "` + strings.Repeat("é", 32) + `…"`},
		{"after=1&after=2", `query parameter "after" is given 2 times; give it at most once`},
		{"tag=a&tag=b", `query parameter "tag" is given 2 times; give it at most once`},
		{"limit=%zz", `query string is malformed: invalid URL escape "%zz"`},
		{"limit=5;after=3", `query string is malformed: invalid semicolon separator in query`},
		// The parameters are checked in a fixed order: repeats, limit, after.
		{"after=x&limit=0&tag=a&tag=b", `query parameter "tag" is given 2 times; give it at most once`},
		{"after=x&limit=0", `query parameter "limit" must be from 1 to 1000, not 0`},
	}
	for _, c := range bad {
		_, err := parseListQuery(c.raw)
		var bad *badRequestError
		if !errors.As(err, &bad) || err.Error() != c.msg {
			t.Errorf("parseListQuery(%q) error = %v, want %s", c.raw, err, c.msg)
		}
	}
}

func sameQuery(a, b plant.ListQuery) bool {
	return a.Limit == b.Limit &&
		(a.After == nil) == (b.After == nil) && (a.After == nil || *a.After == *b.After) &&
		(a.Tag == nil) == (b.Tag == nil) && (a.Tag == nil || *a.Tag == *b.Tag)
}

func showQuery(q plant.ListQuery) string {
	s := "{Limit:" + strconv.Itoa(q.Limit)
	if q.After != nil {
		s += " After:" + strconv.FormatInt(*q.After, 10)
	}
	if q.Tag != nil {
		s += " Tag:" + strconv.Quote(*q.Tag)
	}
	return s + "}"
}

func TestNextLink(t *testing.T) {
	cases := []struct {
		last  int64
		limit int
		tag   *string
		want  string
	}{
		{7, 100, nil, `</plants?after=7&limit=100>; rel="next"`},
		{math.MinInt64, 1, plant.StringPtr(""), `</plants?after=-9223372036854775808&limit=1&tag=>; rel="next"`},
		// Escaped so that the tag cannot end the URI or add parameters.
		{-5, 2, plant.StringPtr(`a b&c=d>; rel="x",<`), `</plants?after=-5&limit=2&tag=a+b%26c%3Dd%3E%3B+rel%3D%22x%22%2C%3C>; rel="next"`},
	}
	for _, c := range cases {
		if got := nextLink(c.last, c.limit, c.tag); got != c.want {
			t.Errorf("nextLink(%d, %d, %v) = %s, want %s", c.last, c.limit, c.tag, got, c.want)
		}
		// What the link carries parses back to the page after last.
		u := c.want[1:strings.IndexByte(c.want, '>')]
		q, err := parseListQuery(u[strings.IndexByte(u, '?')+1:])
		want := plant.ListQuery{After: &c.last, Limit: c.limit, Tag: c.tag}
		if err != nil || !sameQuery(q, want) {
			t.Errorf("link %s parses to %s, %v; want %s", u, showQuery(q), err, showQuery(want))
		}
	}
}

// recordingStore remembers the queries List was asked.
type recordingStore struct {
	plant.Store
	queries []plant.ListQuery
}

func (s *recordingStore) List(ctx context.Context, q plant.ListQuery) ([]plant.Plant, error) {
	s.queries = append(s.queries, q)
	return s.Store.List(ctx, q)
}

func TestList(t *testing.T) {
	store := &recordingStore{Store: memstore.New()}
	for _, p := range []plant.Plant{
		{ID: 3, Name: "fern", Tag: plant.StringPtr("green")},
		{ID: -2, Name: "cactus", Tag: plant.StringPtr("dry")},
		{ID: 10, Name: "moss", Tag: plant.StringPtr("green")},
		{ID: 0, Name: "stone"},
		{ID: 4, Name: "ivy", Tag: plant.StringPtr("")},
	} {
		if _, err := store.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	api := newTestAPI(t, store)
	const (
		all    = `[{"id":-2,"name":"cactus","tag":"dry"},{"id":0,"name":"stone"},{"id":3,"name":"fern","tag":"green"},{"id":4,"name":"ivy","tag":""},{"id":10,"name":"moss","tag":"green"}]`
		noLink = ""
	)
	cases := []struct {
		target     string
		body, link string
		storeLimit int // what the handler asked the store for: the page and one more
	}{
		{"/plants", all, noLink, 101},
		{"/plants?limit=5", all, noLink, 6}, // exactly a page left: no link to an empty page
		{"/plants?limit=2", `[{"id":-2,"name":"cactus","tag":"dry"},{"id":0,"name":"stone"}]`, `</plants?after=0&limit=2>; rel="next"`, 3},
		{"/plants?after=0&limit=2", `[{"id":3,"name":"fern","tag":"green"},{"id":4,"name":"ivy","tag":""}]`, `</plants?after=4&limit=2>; rel="next"`, 3},
		{"/plants?after=4&limit=2", `[{"id":10,"name":"moss","tag":"green"}]`, noLink, 3},
		{"/plants?after=10", `[]`, noLink, 101},
		{"/plants?after=9223372036854775807", `[]`, noLink, 101},
		{"/plants?after=-9223372036854775808&limit=1", `[{"id":-2,"name":"cactus","tag":"dry"}]`, `</plants?after=-2&limit=1>; rel="next"`, 2},
		{"/plants?after=1", `[{"id":3,"name":"fern","tag":"green"},{"id":4,"name":"ivy","tag":""},{"id":10,"name":"moss","tag":"green"}]`, noLink, 101}, // a cursor need not be a stored id
		{"/plants?tag=green&limit=1", `[{"id":3,"name":"fern","tag":"green"}]`, `</plants?after=3&limit=1&tag=green>; rel="next"`, 2},
		{"/plants?after=3&limit=1&tag=green", `[{"id":10,"name":"moss","tag":"green"}]`, noLink, 2},
		{"/plants?tag=", `[{"id":4,"name":"ivy","tag":""}]`, noLink, 101},
		{"/plants?tag=none", `[]`, noLink, 101},
		{"/plants?limit=1&sort=desc&offset=3", `[{"id":-2,"name":"cactus","tag":"dry"}]`, `</plants?after=-2&limit=1>; rel="next"`, 2},
	}
	for _, c := range cases {
		store.queries = nil
		w := serve(api, http.MethodGet, c.target)
		assertAnswer(t, w, http.StatusOK, c.body)
		if got := w.Header().Values("Link"); strings.Join(got, "\n") != c.link {
			t.Errorf("GET %s: Link = %q, want %q", c.target, got, c.link)
		}
		if len(store.queries) != 1 || store.queries[0].Limit != c.storeLimit {
			t.Errorf("GET %s asked the store %d times, limits %v; want once with limit %d", c.target, len(store.queries), store.queries, c.storeLimit)
		}
	}

	// Bad queries never reach the store.
	store.queries = nil
	for target, msg := range map[string]string{
		"/plants?limit=0":                   `query parameter \"limit\" must be from 1 to 1000, not 0`,
		"/plants?limit=abc":                 `query parameter \"limit\" must be an integer from 1 to 1000, not \"abc\"`,
		"/plants?after=9223372036854775808": `query parameter \"after\" 9223372036854775808 is outside the int64 range`,
		"/plants?limit=1&limit=2":           `query parameter \"limit\" is given 2 times; give it at most once`,
		"/plants?tag=%":                     `query string is malformed: invalid URL escape \"%\"`,
		"/plants?after=%E2%80%A8%00":        `query parameter \"after\" must not contain the character U+0000`,
		"/plants?after=%E2%80%A8":           `query parameter \"after\" must be an integer id, not \"\\u2028\"`,
	} {
		assertAnswer(t, serve(api, http.MethodGet, target), http.StatusBadRequest, `{"error":400,"message":"`+msg+`"}`)
	}
	if len(store.queries) != 0 {
		t.Fatalf("bad queries reached the store: %v", store.queries)
	}
}

// TestListFullPage: the largest page, 1000 plants, with a link after it.
func TestListFullPage(t *testing.T) {
	store := memstore.New()
	var want strings.Builder
	want.WriteByte('[')
	for id := range int64(1001) {
		p := plant.Plant{ID: id, Name: "plant " + strconv.FormatInt(id, 10)}
		if _, err := store.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		if id < 1000 {
			if id > 0 {
				want.WriteByte(',')
			}
			want.Write(appendStoredPlant(nil, p))
		}
	}
	want.WriteByte(']')
	w := serve(newTestAPI(t, store), http.MethodGet, "/plants?limit=1000")
	assertAnswer(t, w, http.StatusOK, want.String())
	if got := w.Header().Get("Link"); got != `</plants?after=999&limit=1000>; rel="next"` {
		t.Fatalf("Link = %q", got)
	}
}

// BenchmarkList compares the first page with a page deep in a list of a
// million plants on the memory store: keyset paging makes them cost alike.
// Ids are all seven digits, so both pages encode to the same size and
// only the depth differs.
func BenchmarkList(b *testing.B) {
	const (
		n     = 1_000_000
		first = 1_000_000
	)
	store := memstore.New()
	for id := int64(first); id < first+n; id++ {
		if _, err := store.Create(context.Background(), plant.Plant{ID: id, Name: "plant " + strconv.FormatInt(id, 10)}); err != nil {
			b.Fatal(err)
		}
	}
	api := newTestAPI(b, store)
	const (
		firstPage = "/plants?limit=100"
		deepPage  = "/plants?limit=100&after=1899999" // after the 900,000th id
	)
	get := func(b *testing.B, target string) {
		if w := serve(api, http.MethodGet, target); w.Code != http.StatusOK || w.Header().Get("Link") == "" {
			b.Fatalf("GET %s = %d", target, w.Code)
		}
	}
	for _, bc := range []struct{ name, target string }{{"first", firstPage}, {"after900000", deepPage}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				get(b, bc.target)
			}
		})
	}
	// Both pages in turn, timed apart: on a busy machine the load then
	// falls on both alike and deep/first is the ratio to read.
	b.Run("alternating", func(b *testing.B) {
		var firstTime, deepTime time.Duration
		for b.Loop() {
			start := time.Now()
			get(b, firstPage)
			mid := time.Now()
			get(b, deepPage)
			firstTime += mid.Sub(start)
			deepTime += time.Since(mid)
		}
		b.ReportMetric(float64(deepTime)/float64(firstTime), "deep/first")
	})
}
