package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"go.uber.org/fx"
)

// FuzzCreatePlantHTTP posts any body, with any Content-Type, through the
// real API chain (auth, routing, the create handler, the memory store)
// in-process: no answer may be a 5xx, every answer must match the OpenAPI
// document, and a 200 must carry the name and tag that were sent.
//
// The seed corpus is the black-box bad-input table; `make test` runs it.
// Explore with:
//
//	go test -run '^$' -fuzz FuzzCreatePlantHTTP -fuzztime 60s ./cmd/plantstore
func FuzzCreatePlantHTTP(f *testing.F) {
	for _, tc := range createCases {
		f.Add([]byte(tc.body), tc.header())
	}
	f.Add([]byte(`{"id":1,"name":"Monstera","tag":"tropical"}`), "application/json")
	f.Add([]byte(`{"id":1,"name":"Monstera"}`), "application/json; charset=utf-8") // a conflict with the seed before

	api := apiHandler(f, testConfig(f))
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		req := httptest.NewRequest(http.MethodPost, "/plants", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)

		r := response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
		switch r.Status {
		case http.StatusOK:
			checkCreatedAnswer(t, body, r.Body)
		case http.StatusBadRequest, http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
			assertError(t, r, r.Status)
		default:
			t.Fatalf("POST %q (Content-Type %q) answered %d %s", body, contentType, r.Status, r.Body)
		}
		validateResponse(t, req, r)
	})
}

// checkCreatedAnswer checks a 200 against an independent decoder's reading
// of the request: the answer is exactly {name, tag?} as sent.
func checkCreatedAnswer(t *testing.T, request, answer []byte) {
	t.Helper()
	var sent struct {
		ID   *int64  `json:"id"`
		Name *string `json:"name"`
		Tag  *string `json:"tag"`
	}
	if err := jsonv2.Unmarshal(request, &sent); err != nil || sent.ID == nil || sent.Name == nil {
		t.Fatalf("200 for %q, which json v2 reads as %+v, %v", request, sent, err)
	}
	want, err := jsonv2.Marshal(struct {
		Name string  `json:"name"`
		Tag  *string `json:"tag,omitempty"`
	}{*sent.Name, sent.Tag})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(answer, want) {
		t.Fatalf("POST %q answered %s, want %s", request, answer, want)
	}
}

// apiHandler builds the real app with cfg without starting it and returns
// the API listener's handler, the whole middleware chain included.
func apiHandler(tb testing.TB, cfg config) http.Handler {
	tb.Helper()
	var api http.Handler
	app := newApp(cfg, fx.Invoke(fx.Annotate(func(h http.Handler) { api = h }, fx.ParamTags(`name:"api"`))), fx.NopLogger)
	if err := app.Err(); err != nil {
		tb.Fatal(err)
	}
	return api
}
