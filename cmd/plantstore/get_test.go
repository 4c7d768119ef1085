package main

import (
	"io"
	"net/http"
	"testing"
)

func TestGetPlant(t *testing.T) {
	t.Parallel()
	testGetPlant(t, testConfig(t))
}

func testGetPlant(t *testing.T, cfg config) {
	s := startServer(t, cfg)
	for _, body := range []string{
		`{"id":1,"name":"Monstera","tag":"tropical"}`,
		`{"id":-9223372036854775808,"name":"min"}`,
		`{"id":9223372036854775807,"name":"","tag":""}`,
		`{"id":2,"name":"名前 \"q\" 🌱\n","ignored":[1,2]}`,
	} {
		if r := s.post(t, body); r.Status != http.StatusOK {
			t.Fatalf("create %s = %d %s", body, r.Status, r.Body)
		}
	}
	for path, want := range map[string]string{
		"/plants/1":                    `{"id":1,"name":"Monstera","tag":"tropical"}`,
		"/plants/-9223372036854775808": `{"id":-9223372036854775808,"name":"min"}`,
		"/plants/9223372036854775807":  `{"id":9223372036854775807,"name":"","tag":""}`,
		"/plants/2":                    `{"id":2,"name":"名前 \"q\" 🌱\n"}`,
	} {
		r := s.get(t, path)
		if r.Status != http.StatusOK || string(r.Body) != want || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s = %d %s (%s), want 200 %s", path, r.Status, r.Body, r.Header.Get("Content-Type"), want)
		}
	}

	assertErrorMessage(t, s.get(t, "/plants/3"), http.StatusNotFound, "plant 3 not found")
	assertErrorMessage(t, s.get(t, "/plants/-1"), http.StatusNotFound, "plant -1 not found")
	assertErrorMessage(t, s.get(t, "/plants/abc"), http.StatusBadRequest, `path parameter "id" must be an integer id, not "abc"`)
	assertErrorMessage(t, s.get(t, "/plants/9223372036854775808"), http.StatusBadRequest, `path parameter "id" 9223372036854775808 is outside the int64 range`)
	assertErrorMessage(t, s.get(t, "/plants/1.5"), http.StatusBadRequest, `path parameter "id" must be an integer id, not "1.5"`)
	assertErrorMessage(t, s.get(t, "/plants/1/leaves"), http.StatusNotFound, "no such path: /plants/1/leaves")

	r := s.do(t, s.request(t, http.MethodGet, "/plants/1", "", "", nil))
	assertError(t, r, http.StatusUnauthorized)
	r = s.do(t, s.request(t, http.MethodGet, "/plants/abc", "", "", nil)) // credentials first
	assertError(t, r, http.StatusUnauthorized)
}

// HEAD is served wherever GET is: the GET's status and headers, no body.
func TestHeadAnswersLikeGet(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	s.post(t, `{"id":7,"name":"Aloe","tag":"succulent"}`)
	for _, path := range []string{"/plants/7", "/plants", "/plants?limit=1", "/plants/8", "/plants?limit=0"} {
		get := s.get(t, path)
		resp, err := s.Client.Do(s.request(t, http.MethodHead, path, testToken, "", nil))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != get.Status || len(body) != 0 {
			t.Errorf("HEAD %s = %d with %d body bytes; GET = %d, want the same status and no body", path, resp.StatusCode, len(body), get.Status)
		}
		for _, h := range []string{"Content-Type", "Content-Length", "Link", "Cache-Control"} {
			if resp.Header.Get(h) != get.Header.Get(h) {
				t.Errorf("HEAD %s: %s = %q, GET's = %q", path, h, resp.Header.Get(h), get.Header.Get(h))
			}
		}
	}
	resp, err := s.Client.Do(s.request(t, http.MethodHead, "/plants/7", "", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("HEAD without a token = %d, want 401", resp.StatusCode)
	}
}
