package main

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"slices"
	"testing"
)

// TestAmbiguousBodiesRefused: a create whose body a proxy in front could
// read otherwise than the service (two Content-Types, in either order; a
// content coding the service does not decode) is a 415 on every store, and
// stores nothing. The coding's 415 says what is accepted (RFC 9110
// §15.5.16).
func TestAmbiguousBodiesRefused(t *testing.T) {
	t.Parallel()
	const body = `{"id":1,"name":"fern"}`
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(body))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	const twoTypes = "the request has 2 Content-Type headers; send one, application/json"
	cases := []struct {
		name           string
		header         http.Header
		body           []byte
		message        string
		acceptEncoding string
	}{
		{"JSON, then text", http.Header{"Content-Type": {"application/json", "text/plain"}}, []byte(body), twoTypes, ""},
		{"text, then JSON", http.Header{"Content-Type": {"text/plain", "application/json"}}, []byte(body), twoTypes, ""},
		{"JSON twice", http.Header{"Content-Type": {"application/json", "application/json"}}, []byte(body), twoTypes, ""},
		{"gzip", http.Header{"Content-Encoding": {"gzip"}}, gz.Bytes(), `Content-Encoding "gzip" is not supported; send the body without a content coding`, "identity"},
		{"gzip, body not encoded", http.Header{"Content-Encoding": {"gzip"}}, []byte(body), `Content-Encoding "gzip" is not supported; send the body without a content coding`, "identity"},
		{"identity, then deflate", http.Header{"Content-Encoding": {"identity", "deflate"}}, []byte(body), `Content-Encoding "deflate" is not supported; send the body without a content coding`, "identity"},
	}
	forEachStore(t, func(t *testing.T, cfg config) {
		s := startServer(t, cfg)
		for _, c := range cases {
			req := s.request(t, http.MethodPost, "/plants", testToken, "application/json", c.body)
			for k, v := range c.header {
				req.Header[k] = v
			}
			r := s.do(t, req)
			assertErrorMessage(t, r, http.StatusUnsupportedMediaType, c.message)
			var want []string // no Accept-Encoding unless the coding was refused
			if c.acceptEncoding != "" {
				want = []string{c.acceptEncoding}
			}
			if got := r.Header.Values("Accept-Encoding"); !slices.Equal(got, want) {
				t.Fatalf("%s: Accept-Encoding = %q, want %q", c.name, got, want)
			}
		}
		if r := s.get(t, "/plants"); r.Status != http.StatusOK || string(r.Body) != "[]" {
			t.Fatalf("after the refused creates GET /plants = %d %s, want 200 []", r.Status, r.Body)
		}
		// identity is no coding at all: the body is read as it is.
		req := s.request(t, http.MethodPost, "/plants", testToken, "application/json", []byte(body))
		req.Header.Set("Content-Encoding", "identity")
		if r := s.do(t, req); r.Status != http.StatusOK || string(r.Body) != `{"name":"fern"}` {
			t.Fatalf("create with Content-Encoding: identity = %d %s", r.Status, r.Body)
		}
	})
}
