package main

import (
	"net/http"
	"testing"
)

func TestDeletePlant(t *testing.T) {
	t.Parallel()
	testDeletePlant(t, testConfig(t))
}

func testDeletePlant(t *testing.T, cfg config) {
	s := startServer(t, cfg)
	for _, body := range []string{
		`{"id":1,"name":"Monstera","tag":"tropical"}`,
		`{"id":-9223372036854775808,"name":"min"}`,
		`{"id":9223372036854775807,"name":"max"}`,
	} {
		if r := s.post(t, body); r.Status != http.StatusOK {
			t.Fatalf("create %s = %d %s", body, r.Status, r.Body)
		}
	}

	// Refused deletes delete nothing.
	assertError(t, s.do(t, s.request(t, http.MethodDelete, "/plants/1", "", "", nil)), http.StatusUnauthorized)
	assertError(t, s.do(t, s.request(t, http.MethodDelete, "/plants/1", "wrong-token", "", nil)), http.StatusUnauthorized)
	assertErrorMessage(t, s.delete(t, "/plants/abc"), http.StatusBadRequest, `path parameter "id" must be an integer id, not "abc"`)
	assertErrorMessage(t, s.delete(t, "/plants/9223372036854775808"), http.StatusBadRequest, `path parameter "id" 9223372036854775808 is outside the int64 range`)
	assertErrorMessage(t, s.delete(t, "/plants/-9223372036854775809"), http.StatusBadRequest, `path parameter "id" -9223372036854775809 is outside the int64 range`)
	assertErrorMessage(t, s.delete(t, "/plants/2"), http.StatusNotFound, "plant 2 not found")
	assertPage(t, s.get(t, "/plants"), `[{"id":-9223372036854775808,"name":"min"},{"id":1,"name":"Monstera","tag":"tropical"},{"id":9223372036854775807,"name":"max"}]`, "")

	for _, path := range []string{"/plants/1", "/plants/-9223372036854775808"} {
		r := s.delete(t, path)
		if r.Status != http.StatusNoContent || len(r.Body) != 0 || r.Header.Get("Content-Type") != "" {
			t.Fatalf("DELETE %s = %d %q (Content-Type %q), want 204 with no body", path, r.Status, r.Body, r.Header.Get("Content-Type"))
		}
	}
	assertErrorMessage(t, s.get(t, "/plants/1"), http.StatusNotFound, "plant 1 not found")
	assertErrorMessage(t, s.delete(t, "/plants/1"), http.StatusNotFound, "plant 1 not found") // gone: a repeat finds nothing
	assertPage(t, s.get(t, "/plants"), `[{"id":9223372036854775807,"name":"max"}]`, "")

	// A deleted id is free again, for any content.
	if r := s.post(t, `{"id":1,"name":"Fern"}`); r.Status != http.StatusOK {
		t.Fatalf("re-create after delete = %d %s", r.Status, r.Body)
	}
	assertPage(t, s.get(t, "/plants"), `[{"id":1,"name":"Fern"},{"id":9223372036854775807,"name":"max"}]`, "")
}
