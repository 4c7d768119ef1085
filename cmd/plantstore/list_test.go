package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// The read and delete tests are functions of a config so that they run on
// every store: TestX runs them on the memory store, and a per-store runner
// can call the same functions with a bolt or postgres config.

func TestListPlants(t *testing.T) {
	t.Parallel()
	testListPlants(t, testConfig(t))
}

func testListPlants(t *testing.T, cfg config) {
	s := startServer(t, cfg)

	// An empty store lists [], not null, and links nowhere.
	assertPage(t, s.get(t, "/plants"), `[]`, "")

	for _, body := range []string{
		`{"id":5,"name":"Monstera","tag":"tropical"}`,
		`{"id":-7,"name":"Cactus"}`,
		`{"id":9223372036854775807,"name":"max","tag":""}`,
		`{"id":-9223372036854775808,"name":"min","tag":"tropical"}`,
		`{"id":0,"name":"名前 \"q\" 🌱","tag":"a b&c"}`,
		`{"id":-1,"name":"","tag":"tropical"}`,
	} {
		if r := s.post(t, body); r.Status != http.StatusOK {
			t.Fatalf("create %s = %d %s", body, r.Status, r.Body)
		}
	}
	const (
		minP = `{"id":-9223372036854775808,"name":"min","tag":"tropical"}`
		m7   = `{"id":-7,"name":"Cactus"}`
		m1   = `{"id":-1,"name":"","tag":"tropical"}`
		zero = `{"id":0,"name":"名前 \"q\" 🌱","tag":"a b&c"}`
		five = `{"id":5,"name":"Monstera","tag":"tropical"}`
		maxP = `{"id":9223372036854775807,"name":"max","tag":""}`
		none = ""
	)
	pages := []struct{ path, body, link string }{
		{"/plants", "[" + strings.Join([]string{minP, m7, m1, zero, five, maxP}, ",") + "]", none},
		{"/plants?limit=6", "[" + strings.Join([]string{minP, m7, m1, zero, five, maxP}, ",") + "]", none},
		{"/plants?limit=2", "[" + minP + "," + m7 + "]", `</plants?after=-7&limit=2>; rel="next"`},
		{"/plants?after=-7&limit=2", "[" + m1 + "," + zero + "]", `</plants?after=0&limit=2>; rel="next"`},
		{"/plants?after=0&limit=2", "[" + five + "," + maxP + "]", none},
		{"/plants?after=9223372036854775807", `[]`, none},
		{"/plants?after=-9223372036854775808", "[" + strings.Join([]string{m7, m1, zero, five, maxP}, ",") + "]", none},
		{"/plants?after=-2&limit=1", "[" + m1 + "]", `</plants?after=-1&limit=1>; rel="next"`}, // a cursor need not be stored
		{"/plants?tag=tropical&limit=2", "[" + minP + "," + m1 + "]", `</plants?after=-1&limit=2&tag=tropical>; rel="next"`},
		{"/plants?after=-1&limit=2&tag=tropical", "[" + five + "]", none},
		{"/plants?tag=", "[" + maxP + "]", none}, // the empty tag, not the untagged plants
		{"/plants?tag=a+b%26c&limit=1", "[" + zero + "]", none},
		{"/plants?tag=a%20b%26c", "[" + zero + "]", none},
		{"/plants?tag=unknown", `[]`, none},
		// Unknown parameters are ignored.
		{"/plants?limit=1&offset=3&sort=desc&LIMIT=x&page", "[" + minP + "]", `</plants?after=-9223372036854775808&limit=1>; rel="next"`},
	}
	for _, p := range pages {
		assertPage(t, s.get(t, p.path), p.body, p.link)
	}

	// Following every Link from the first page walks the whole list.
	var walked []string
	for path := "/plants?limit=1"; path != ""; {
		r := s.get(t, path)
		walked = append(walked, string(r.Body))
		path = nextPath(t, r)
	}
	if got, want := strings.Join(walked, ""), "["+minP+"]["+m7+"]["+m1+"]["+zero+"]["+five+"]["+maxP+"]"; got != want {
		t.Fatalf("walk by one = %s, want %s", got, want)
	}

	for path, msg := range map[string]string{
		"/plants?limit=0":                    `query parameter "limit" must be from 1 to 1000, not 0`,
		"/plants?limit=-1":                   `query parameter "limit" must be from 1 to 1000, not -1`,
		"/plants?limit=1001":                 `query parameter "limit" must be from 1 to 1000, not 1001`,
		"/plants?limit=2147483648":           `query parameter "limit" must be from 1 to 1000, not 2147483648`,
		"/plants?limit=abc":                  `query parameter "limit" must be an integer from 1 to 1000, not "abc"`,
		"/plants?limit=":                     `query parameter "limit" must be an integer from 1 to 1000, not ""`,
		"/plants?after=abc":                  `query parameter "after" must be an integer id, not "abc"`,
		"/plants?after=9223372036854775808":  `query parameter "after" 9223372036854775808 is outside the int64 range`,
		"/plants?after=-9223372036854775809": `query parameter "after" -9223372036854775809 is outside the int64 range`,
		"/plants?limit=1&limit=2":            `query parameter "limit" is given 2 times; give it at most once`,
		"/plants?after=1&after=1":            `query parameter "after" is given 2 times; give it at most once`,
		"/plants?tag=a&tag=b":                `query parameter "tag" is given 2 times; give it at most once`,
		"/plants?tag=%zz":                    `query string is malformed: invalid URL escape "%zz"`,
		"/plants?limit=1;after=2":            `query string is malformed: invalid semicolon separator in query`,
	} {
		assertErrorMessage(t, s.get(t, path), http.StatusBadRequest, msg)
	}

	// Credentials are checked before the query is read.
	r := s.do(t, s.request(t, http.MethodGet, "/plants?limit=abc", "", "", nil))
	assertError(t, r, http.StatusUnauthorized)
	if got := r.Header.Get("WWW-Authenticate"); got != `Bearer realm="plantstore"` {
		t.Fatalf("WWW-Authenticate = %q", got)
	}
	r = s.do(t, s.request(t, http.MethodGet, "/plants", "wrong-token", "", nil))
	assertError(t, r, http.StatusUnauthorized)

	// The router answers other methods with the path's methods in Allow.
	for path, allow := range map[string]string{"/plants": "GET, HEAD, POST", "/plants/1": "DELETE, GET, HEAD, PUT", "/plants/abc": "DELETE, GET, HEAD, PUT"} {
		r := s.do(t, s.request(t, http.MethodPatch, path, testToken, "", nil))
		assertError(t, r, http.StatusMethodNotAllowed)
		if got := r.Header.Get("Allow"); got != allow {
			t.Errorf("PATCH %s: Allow = %q, want %q", path, got, allow)
		}
	}
}

// get sends an authenticated GET.
func (s *testServer) get(t *testing.T, path string) response {
	t.Helper()
	return s.do(t, s.request(t, http.MethodGet, path, testToken, "", nil))
}

// delete sends an authenticated DELETE.
func (s *testServer) delete(t *testing.T, path string) response {
	t.Helper()
	return s.do(t, s.request(t, http.MethodDelete, path, testToken, "", nil))
}

// send is a request for goroutines other than the test's: it returns what
// went wrong instead of failing the test, and checks only the status (the
// contract tests validate the same answers against the OpenAPI document).
func (s *testServer) send(ctx context.Context, method, path, body string, want int) error {
	req, err := http.NewRequestWithContext(ctx, method, s.API+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s %s = %d %s, want %d", method, path, body, resp.StatusCode, got, want)
	}
	return nil
}

// assertPage checks a 200 list answer: exact body and exact Link ("" for none).
func assertPage(t *testing.T, r response, body, link string) {
	t.Helper()
	if r.Status != http.StatusOK || string(r.Body) != body {
		t.Fatalf("page = %d %s, want 200 %s", r.Status, r.Body, body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	if got := strings.Join(r.Header.Values("Link"), "\n"); got != link {
		t.Fatalf("page %s: Link = %q, want %q", body, got, link)
	}
}

// assertErrorMessage checks an Error answer and its exact message.
func assertErrorMessage(t *testing.T, r response, status int, msg string) {
	t.Helper()
	assertError(t, r, status)
	if got := r.messageOf(t); got != msg {
		t.Fatalf("message = %q, want %q", got, msg)
	}
}

func (r response) messageOf(t *testing.T) string {
	t.Helper()
	var e struct{ Message string }
	r.JSON(t, &e)
	return e.Message
}

// nextPath returns the path of the next page from the answer's Link header,
// or "" when it has none.
func nextPath(t *testing.T, r response) string {
	t.Helper()
	link := r.Header.Get("Link")
	if link == "" {
		return ""
	}
	uri, ok := strings.CutPrefix(link, "<")
	if ok {
		uri, _, ok = strings.Cut(uri, `>; rel="next"`)
	}
	if !ok || !strings.HasPrefix(uri, "/plants?") {
		t.Fatalf("Link %q is not <{/plants?...}>; rel=\"next\"", link)
	}
	return uri
}
