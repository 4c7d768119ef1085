package plants

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// TestAmbiguousBodyHeaders: a create whose body could be read more than one
// way (two Content-Types, a content coding) is refused with 415, whatever
// the order of the headers, and nothing is stored.
func TestAmbiguousBodyHeaders(t *testing.T) {
	const body = `{"id":1,"name":"fern"}`
	const twoTypes = "the request has 2 Content-Type headers; send one, application/json"
	for _, tc := range []struct {
		name           string
		header         http.Header
		status         int
		message        string // for a 415
		acceptEncoding string // the 415's Accept-Encoding
	}{
		{name: "two Content-Types, JSON first", header: http.Header{"Content-Type": {"application/json", "text/plain"}}, status: 415, message: twoTypes},
		{name: "two Content-Types, JSON last", header: http.Header{"Content-Type": {"text/plain", "application/json"}}, status: 415, message: twoTypes},
		{name: "JSON twice", header: http.Header{"Content-Type": {"application/json", "application/json"}}, status: 415, message: twoTypes},
		{name: "three Content-Types", header: http.Header{"Content-Type": {"application/json", "application/json", "text/plain"}}, status: 415,
			message: "the request has 3 Content-Type headers; send one, application/json"},
		{name: "two types in one header", header: http.Header{"Content-Type": {"application/json, text/plain"}}, status: 415,
			message: `Content-Type must be application/json, not "application/json, text/plain"`},
		{name: "gzip", header: http.Header{"Content-Encoding": {"gzip"}}, status: 415, acceptEncoding: "identity",
			message: `Content-Encoding "gzip" is not supported; send the body without a content coding`},
		{name: "br", header: http.Header{"Content-Encoding": {"br"}}, status: 415, acceptEncoding: "identity",
			message: `Content-Encoding "br" is not supported; send the body without a content coding`},
		{name: "identity, then gzip in one header", header: http.Header{"Content-Encoding": {"identity, gzip"}}, status: 415, acceptEncoding: "identity",
			message: `Content-Encoding "identity, gzip" is not supported; send the body without a content coding`},
		{name: "identity, then gzip in two headers", header: http.Header{"Content-Encoding": {"identity", "gzip"}}, status: 415, acceptEncoding: "identity",
			message: `Content-Encoding "gzip" is not supported; send the body without a content coding`},
		{name: "a coding that is not a token", header: http.Header{"Content-Encoding": {"x\x7f"}}, status: 415, acceptEncoding: "identity",
			message: `Content-Encoding "x\x7f" is not supported; send the body without a content coding`},
		// identity is no coding at all: the body is what it says.
		{name: "identity", header: http.Header{"Content-Encoding": {"identity"}}, status: 200},
		{name: "IDENTITY", header: http.Header{"Content-Encoding": {"IDENTITY"}}, status: 200},
		{name: "identity twice", header: http.Header{"Content-Encoding": {" identity ,identity", "identity"}}, status: 200},
		{name: "an empty Content-Encoding", header: http.Header{"Content-Encoding": {""}}, status: 200},
		{name: "empty list elements", header: http.Header{"Content-Encoding": {", ,"}}, status: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := memstore.New()
			api := newTestAPI(t, store)
			req := httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			for k, v := range tc.header {
				req.Header[k] = v
			}
			rec := httptest.NewRecorder()
			api.ServeHTTP(rec, req)
			if tc.status == http.StatusOK {
				assertAnswer(t, rec, http.StatusOK, `{"name":"fern"}`)
				return
			}
			assertErrorRecorded(t, rec, tc.status, tc.message)
			if got := rec.Header().Values("Accept-Encoding"); tc.acceptEncoding == "" && len(got) != 0 ||
				tc.acceptEncoding != "" && (len(got) != 1 || got[0] != tc.acceptEncoding) {
				t.Fatalf("Accept-Encoding = %q, want %q", got, tc.acceptEncoding)
			}
			if got, _ := store.List(context.Background(), plant.ListQuery{Limit: 10}); len(got) != 0 {
				t.Fatalf("a refused create stored %v", got)
			}
		})
	}
}
