package main

import (
	"net/http"
	"testing"
)

// TestBadParametersOnEveryStore: a query parameter or path id that is not
// valid UTF-8, holds U+0000, or (for an integer) is not in canonical decimal
// is the same 400 naming the parameter on every store. PostgreSQL refuses
// such text (SQLSTATE 22021, once a 500) where the other stores answered
// 200 [], and "/plants/005" once reached plant 5: a delete under a second
// spelling of its id removed it.
func TestBadParametersOnEveryStore(t *testing.T) {
	t.Parallel()
	const canonical = ` in canonical decimal (no '+', no leading zeros, no "-0"), not `
	const limit = `query parameter "limit" must be an integer from 1 to 1000`
	const after = `query parameter "after" must be an integer id`
	const id = `path parameter "id" must be an integer id`
	list := map[string]string{
		"/plants?tag=%ff":         `query parameter "tag" is not valid UTF-8`,
		"/plants?tag=fern%C3":     `query parameter "tag" is not valid UTF-8`,
		"/plants?tag=%ED%A0%80":   `query parameter "tag" is not valid UTF-8`, // a UTF-16 surrogate
		"/plants?tag=%C0%80":      `query parameter "tag" is not valid UTF-8`, // an overlong U+0000
		"/plants?tag=%00":         `query parameter "tag" must not contain the character U+0000`,
		"/plants?tag=fern%00":     `query parameter "tag" must not contain the character U+0000`,
		"/plants?limit=%ff":       `query parameter "limit" is not valid UTF-8`,
		"/plants?limit=1%00":      `query parameter "limit" must not contain the character U+0000`,
		"/plants?after=%ff":       `query parameter "after" is not valid UTF-8`,
		"/plants?after=%00":       `query parameter "after" must not contain the character U+0000`,
		"/plants?limit=0001":      limit + canonical + `"0001"`,
		"/plants?limit=%2B5":      limit + canonical + `"+5"`,
		"/plants?limit=-0":        limit + canonical + `"-0"`,
		"/plants?after=%2B4":      after + canonical + `"+4"`,
		"/plants?after=04":        after + canonical + `"04"`,
		"/plants?after=-0":        after + canonical + `"-0"`,
		"/plants?after=-004":      after + canonical + `"-004"`,
		"/plants?after=1&tag=%ff": `query parameter "tag" is not valid UTF-8`,
	}
	ids := map[string]string{
		"/plants/%ff":  `path parameter "id" is not valid UTF-8`,
		"/plants/5%ff": `path parameter "id" is not valid UTF-8`,
		"/plants/%00":  `path parameter "id" must not contain the character U+0000`,
		"/plants/5%00": `path parameter "id" must not contain the character U+0000`,
		"/plants/+5":   id + canonical + `"+5"`,
		"/plants/%2B5": id + canonical + `"+5"`,
		"/plants/005":  id + canonical + `"005"`,
		"/plants/05":   id + canonical + `"05"`,
		"/plants/-0":   id + canonical + `"-0"`,
		"/plants/00":   id + canonical + `"00"`,
	}
	forEachStore(t, func(t *testing.T, cfg config) {
		s := startServer(t, cfg)
		for _, body := range []string{`{"id":0,"name":"zero"}`, `{"id":5,"name":"fern","tag":"fern"}`} {
			if r := s.post(t, body); r.Status != http.StatusOK {
				t.Fatalf("create %s = %d %s", body, r.Status, r.Body)
			}
		}
		for path, msg := range list {
			assertErrorMessage(t, s.get(t, path), http.StatusBadRequest, msg)
		}
		for path, msg := range ids {
			assertErrorMessage(t, s.get(t, path), http.StatusBadRequest, msg)
			assertErrorMessage(t, s.delete(t, path), http.StatusBadRequest, msg)
		}
		// Nothing was deleted under another spelling of its id.
		if r := s.get(t, "/plants"); r.Status != http.StatusOK ||
			string(r.Body) != `[{"id":0,"name":"zero"},{"id":5,"name":"fern","tag":"fern"}]` {
			t.Fatalf("after the refused requests GET /plants = %d %s", r.Status, r.Body)
		}
	})
}
