package main

import (
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
)

// TestUpdatePlant runs PUT /plants/{id} and its conditional requests on
// every store, every answer validated against the OpenAPI document.
func TestUpdatePlant(t *testing.T) {
	t.Parallel()
	forEachStore(t, testUpdatePlant)
}

func testUpdatePlant(t *testing.T, cfg config) {
	s := startServer(t, cfg)
	if r := s.post(t, `{"id":1,"name":"Monstera","tag":"tropical"}`); r.Status != http.StatusOK {
		t.Fatalf("create = %d %s", r.Status, r.Body)
	}
	got := s.get(t, "/plants/1")
	etag := got.Header.Get("ETag")
	if got.Status != http.StatusOK || etag == "" {
		t.Fatalf("GET = %d ETag %q, want 200 with an ETag", got.Status, etag)
	}
	head := s.do(t, s.request(t, http.MethodHead, "/plants/1", testToken, "", nil))
	if head.Header.Get("ETag") != etag {
		t.Fatalf("HEAD ETag = %q, want %q", head.Header.Get("ETag"), etag)
	}
	notModified := s.conditional(t, http.MethodGet, "/plants/1", "", "If-None-Match", etag)
	if notModified.Status != http.StatusNotModified || len(notModified.Body) != 0 {
		t.Fatalf("If-None-Match = %d %q, want 304 without a body", notModified.Status, notModified.Body)
	}

	assertErrorMessage(t, s.put(t, "/plants/2", `{"name":"x"}`), http.StatusNotFound, "plant 2 not found")
	assertErrorMessage(t, s.put(t, "/plants/1", `{"id":3,"name":"x"}`), http.StatusBadRequest, `"id" 3 differs from the path's id 1`)
	assertError(t, s.do(t, s.request(t, http.MethodPut, "/plants/1", "", "application/json", []byte(`{"name":"x"}`))), http.StatusUnauthorized)

	r := s.conditional(t, http.MethodPut, "/plants/1", `{"name":"Monstera deliciosa"}`, "If-Match", etag)
	if r.Status != http.StatusOK || string(r.Body) != `{"name":"Monstera deliciosa"}` {
		t.Fatalf("PUT = %d %s, want 200 {\"name\":\"Monstera deliciosa\"}", r.Status, r.Body)
	}
	newTag := r.Header.Get("ETag")
	if newTag == etag || s.get(t, "/plants/1").Header.Get("ETag") != newTag {
		t.Fatalf("PUT's ETag %q: want a new one, the one GET now shows", newTag)
	}
	assertErrorMessage(t, s.conditional(t, http.MethodPut, "/plants/1", `{"name":"x"}`, "If-Match", etag),
		http.StatusPreconditionFailed, "plant 1 has changed: If-Match does not match its current ETag")
	assertErrorMessage(t, s.conditional(t, http.MethodDelete, "/plants/1", "", "If-Match", etag),
		http.StatusPreconditionFailed, "plant 1 has changed: If-Match does not match its current ETag")

	// After the PUT, re-posting the original body is a conflict, the new
	// content an identical re-create.
	assertErrorMessage(t, s.post(t, `{"id":1,"name":"Monstera","tag":"tropical"}`), http.StatusConflict, "plant 1 already exists with a different name or tag")
	if r := s.post(t, `{"id":1,"name":"Monstera deliciosa"}`); r.Status != http.StatusOK {
		t.Fatalf("identical re-create after PUT = %d %s", r.Status, r.Body)
	}

	// Two PUTs with one If-Match: exactly one 200, the other 412.
	for round := range 5 {
		current := s.get(t, "/plants/1").Header.Get("ETag")
		var wg sync.WaitGroup
		reqs := make([]*http.Request, 2)
		answers := make([]response, 2)
		errs := make([]error, 2)
		for i := range reqs {
			body := `{"name":"round ` + strconv.Itoa(round) + "/" + strconv.Itoa(i) + `"}`
			reqs[i] = s.request(t, http.MethodPut, "/plants/1", testToken, "application/json", []byte(body))
			reqs[i].Header.Set("If-Match", current)
			wg.Go(func() { answers[i], errs[i] = s.send1(reqs[i]) })
		}
		wg.Wait()
		statuses := make([]int, 2)
		for i, r := range answers {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			validateResponse(t, reqs[i], r)
			statuses[i] = r.Status
		}
		if oneEach := statuses[0] == 200 && statuses[1] == 412 || statuses[0] == 412 && statuses[1] == 200; !oneEach {
			t.Fatalf("round %d: two PUTs with one If-Match answered %v, want one 200 and one 412", round, statuses)
		}
	}

	// Preconditions hold on every method (each answer validated against
	// the OpenAPI document): If-Match on a GET, If-None-Match on a PUT
	// and a DELETE, a malformed one a 400 everywhere.
	current := s.get(t, "/plants/1")
	assertErrorMessage(t, s.conditional(t, http.MethodGet, "/plants/1", "", "If-Match", etag),
		http.StatusPreconditionFailed, "plant 1 has changed: If-Match does not match its current ETag")
	assertErrorMessage(t, s.conditional(t, http.MethodPut, "/plants/1", `{"name":"x"}`, "If-None-Match", "*"),
		http.StatusPreconditionFailed, "plant 1 exists; If-None-Match: * requires that it not")
	assertErrorMessage(t, s.conditional(t, http.MethodDelete, "/plants/1", "", "If-None-Match", current.Header.Get("ETag")),
		http.StatusPreconditionFailed, "plant 1 has not changed: If-None-Match lists its current ETag")
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		body := ""
		if method == http.MethodPut {
			body = `{"name":"x"}`
		}
		assertErrorMessage(t, s.conditional(t, method, "/plants/1", body, "If-None-Match", "x"),
			http.StatusBadRequest, `If-None-Match must be "*" or a list of entity tags such as "abc", not "x"`)
	}
	if after := s.get(t, "/plants/1"); string(after.Body) != string(current.Body) {
		t.Fatalf("after refused requests the plant is %s, want %s", after.Body, current.Body)
	}

	if r := s.conditional(t, http.MethodDelete, "/plants/1", "", "If-Match", "*"); r.Status != http.StatusNoContent {
		t.Fatalf("DELETE If-Match: * = %d %s, want 204", r.Status, r.Body)
	}
	assertErrorMessage(t, s.conditional(t, http.MethodPut, "/plants/1", `{"name":"x"}`, "If-Match", "*"),
		http.StatusPreconditionFailed, "plant 1 not found; If-Match requires it to exist")
}

// put replaces a plant with a valid token.
func (s *testServer) put(t *testing.T, path, body string) response {
	t.Helper()
	return s.do(t, s.request(t, http.MethodPut, path, testToken, "application/json", []byte(body)))
}

// conditional sends method path with a valid token, the body (JSON, when
// not empty) and one more header.
func (s *testServer) conditional(t *testing.T, method, path, body, header, value string) response {
	t.Helper()
	contentType := ""
	if body != "" {
		contentType = "application/json"
	}
	req := s.request(t, method, path, testToken, contentType, []byte(body))
	req.Header.Set(header, value)
	return s.do(t, req)
}

// send1 sends req and reads the answer without validating it, for
// goroutines, which must not fail the test themselves.
func (s *testServer) send1(req *http.Request) (response, error) {
	resp, err := s.Client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: body}, err
}
