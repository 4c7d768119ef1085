package main

// Black-box tests of POST /plants against the real app: every answer is
// checked exactly and validated against the OpenAPI document (testServer.do).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/plant"
)

func TestCreatePlant(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, cfg config) {
		s := startServer(t, cfg)
		for _, step := range []struct {
			name, body string
			status     int
			answer     string // the exact body
		}{
			{"with tag", `{"id":1,"name":"Monstera","tag":"tropical"}`, 200, `{"name":"Monstera","tag":"tropical"}`},
			{"without tag", `{"id":2,"name":"Ficus"}`, 200, `{"name":"Ficus"}`},
			{"empty name and tag", `{"id":3,"name":"","tag":""}`, 200, `{"name":"","tag":""}`},
			{"escapes kept", `{"id":4,"name":"\"Aloe\" \u00e9\n","tag":"\ud83c\udf35"}`, 200, `{"name":"\"Aloe\" é\n","tag":"🌵"}`},
			{"identical re-create", `{"id":1,"name":"Monstera","tag":"tropical"}`, 200, `{"name":"Monstera","tag":"tropical"}`},
			{"identical re-create, other member order and an unknown member", `{"tag":"tropical","color":"green","name":"Monstera","id":1}`, 200, `{"name":"Monstera","tag":"tropical"}`},
			{"identical re-create without tag", `{"id":2,"name":"Ficus"}`, 200, `{"name":"Ficus"}`},
			{"other name", `{"id":1,"name":"Monstera deliciosa","tag":"tropical"}`, 409, `{"error":409,"message":"plant 1 already exists with a different name or tag"}`},
			{"other tag", `{"id":1,"name":"Monstera","tag":"climber"}`, 409, `{"error":409,"message":"plant 1 already exists with a different name or tag"}`},
			{"tag left out", `{"id":1,"name":"Monstera"}`, 409, `{"error":409,"message":"plant 1 already exists with a different name or tag"}`},
			{"tag added", `{"id":2,"name":"Ficus","tag":""}`, 409, `{"error":409,"message":"plant 2 already exists with a different name or tag"}`},
			{"name differs in case only", `{"id":2,"name":"ficus"}`, 409, `{"error":409,"message":"plant 2 already exists with a different name or tag"}`},
		} {
			r := s.post(t, step.body)
			if r.Status != step.status || string(r.Body) != step.answer {
				t.Fatalf("%s: POST %s\n got %d %s\nwant %d %s", step.name, step.body, r.Status, r.Body, step.status, step.answer)
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("%s: Content-Type = %q", step.name, ct)
			}
		}
		// A refused create changed nothing.
		assertStored(t, s, plant.Plant{ID: 1, Name: "Monstera", Tag: plant.StringPtr("tropical")})
		assertStored(t, s, plant.Plant{ID: 2, Name: "Ficus"})
		assertStored(t, s, plant.Plant{ID: 3, Name: "", Tag: plant.StringPtr("")})
		assertStored(t, s, plant.Plant{ID: 4, Name: "\"Aloe\" é\n", Tag: plant.StringPtr("🌵")})
	})
}

// createCase is one request body and the exact answer it must get.
type createCase struct {
	name        string
	contentType string // "" sends none
	body        string
	status      int
	answer      string // exact body for 200; the Error's message otherwise
}

// createCases is the bad-input table of issue 2 plus its valid neighbours.
// FuzzCreatePlantHTTP seeds its corpus from it.
var createCases = []createCase{
	{name: "empty body", body: ``, status: 400, answer: "request body is empty; send a NewPlant JSON object"},
	{name: "null", body: `null`, status: 400, answer: "request body must be a JSON object, not null"},
	{name: "array", body: `[{"id":1,"name":"a"}]`, status: 400, answer: "request body must be a JSON object, not an array"},
	{name: "malformed JSON", body: `{"id":1,"name":"a",}`, status: 400, answer: "request body is not valid JSON at byte 18"},
	{name: "truncated JSON", body: `{"id":1,"name":"a"`, status: 400, answer: "request body ends before the JSON object is complete"},
	{name: "not JSON", body: `id=1&name=a`, status: 400, answer: "request body is not valid JSON"},
	{name: "trailing data", body: `{"id":1,"name":"a"}{"id":2,"name":"b"}`, status: 400, answer: "request body has data after the JSON object"},
	{name: "trailing garbage", body: `{"id":1,"name":"a"} x`, status: 400, answer: "request body has data after the JSON object"},
	{name: "repeated key", body: `{"id":1,"name":"a","name":"b"}`, status: 400, answer: "request body repeats the key /name; each key may appear once"},
	{name: "no id", body: `{"name":"a"}`, status: 400, answer: `"id" is required`},
	{name: "no name", body: `{"id":1}`, status: 400, answer: `"name" is required`},
	{name: "id as string", body: `{"id":"1","name":"a"}`, status: 400, answer: `"id" must be an integer, not a string`},
	{name: "id 1.5", body: `{"id":1.5,"name":"a"}`, status: 400, answer: `"id" must be an integer, not 1.5`},
	{name: "id above int64", body: `{"id":9223372036854775808,"name":"a"}`, status: 400, answer: `"id" 9223372036854775808 is outside the int64 range`},
	{name: "id below int64", body: `{"id":-9223372036854775809,"name":"a"}`, status: 400, answer: `"id" -9223372036854775809 is outside the int64 range`},
	{name: "id null", body: `{"id":null,"name":"a"}`, status: 400, answer: `"id" must be an integer, not null`},
	{name: "name null", body: `{"id":1,"name":null}`, status: 400, answer: `"name" must be a string, not null`},
	{name: "tag null", body: `{"id":1,"name":"a","tag":null}`, status: 400, answer: `"tag" must be a string, not null`},
	{name: "name a number", body: `{"id":1,"name":42}`, status: 400, answer: `"name" must be a string, not a number`},
	{name: "invalid UTF-8 in name", body: "{\"id\":1,\"name\":\"Mon\xffstera\"}", status: 400, answer: "request body is not valid UTF-8"},
	{name: "NUL in name", body: `{"id":1,"name":"a\u0000b"}`, status: 400, answer: `"name" must not contain the character U+0000`},
	{name: "name over 1024 characters", body: `{"id":1,"name":"` + strings.Repeat("é", 1025) + `"}`, status: 400, answer: `"name" must be at most 1024 characters`},
	{name: "tag over 1024 characters", body: `{"id":1,"name":"a","tag":"` + strings.Repeat("t", 1025) + `"}`, status: 400, answer: `"tag" must be at most 1024 characters`},
	{name: "name and tag of 1024 characters", body: `{"id":13,"name":"` + strings.Repeat("n", 1024) + `","tag":"` + strings.Repeat("t", 1024) + `"}`,
		status: 200, answer: `{"name":"` + strings.Repeat("n", 1024) + `","tag":"` + strings.Repeat("t", 1024) + `"}`},
	{name: "id -1", body: `{"id":-1,"name":"negative"}`, status: 200, answer: `{"name":"negative"}`},
	{name: "id 0", body: `{"id":0,"name":"zero"}`, status: 200, answer: `{"name":"zero"}`},
	{name: "smallest id", body: `{"id":-9223372036854775808,"name":"min"}`, status: 200, answer: `{"name":"min"}`},
	{name: "unknown field", body: `{"id":10,"name":"a","color":"green","care":{"water":"weekly"}}`, status: 200, answer: `{"name":"a"}`},
	{name: "text/plain", contentType: "text/plain", body: `{"id":11,"name":"a"}`, status: 415, answer: `Content-Type must be application/json, not "text/plain"`},
	{name: "no Content-Type", contentType: "-", body: `{"id":11,"name":"a"}`, status: 415, answer: "Content-Type must be application/json; the request has none"},
	{name: "form Content-Type", contentType: "application/x-www-form-urlencoded", body: `{"id":11,"name":"a"}`, status: 415, answer: `Content-Type must be application/json, not "application/x-www-form-urlencoded"`},
	{name: "charset parameter", contentType: "application/json; charset=utf-8", body: `{"id":12,"name":"a","tag":"b"}`, status: 200, answer: `{"name":"a","tag":"b"}`},
	{name: "Content-Type checked before the body", contentType: "text/plain", body: `not json`, status: 415, answer: `Content-Type must be application/json, not "text/plain"`},
}

func TestCreateBadInput(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, cfg config) {
		s := startServer(t, cfg)
		for _, tc := range createCases {
			t.Run(tc.name, func(t *testing.T) {
				r := s.do(t, s.request(t, http.MethodPost, "/plants", testToken, tc.header(), []byte(tc.body)))
				if tc.status == http.StatusOK {
					if r.Status != http.StatusOK || string(r.Body) != tc.answer {
						t.Fatalf("POST %q = %d %s, want 200 %s", tc.body, r.Status, r.Body, tc.answer)
					}
					return
				}
				assertErrorMessage(t, r, tc.status, tc.answer)
			})
		}
		// Nothing refused was stored: id 1 and 11 appear only in refused requests.
		for _, id := range []int64{1, 2, 11} {
			if p, err := s.Store.Get(context.Background(), id); !errors.Is(err, plant.ErrNotFound) {
				t.Fatalf("store.Get(%d) = %+v, %v after refused requests; want ErrNotFound", id, p, err)
			}
		}
		assertStored(t, s, plant.Plant{ID: -1, Name: "negative"})
		assertStored(t, s, plant.Plant{ID: 10, Name: "a"})
		assertStored(t, s, plant.Plant{ID: 12, Name: "a", Tag: plant.StringPtr("b")})
	})
}

// header is the Content-Type to send: application/json unless the case
// says otherwise, "-" meaning none.
func (tc createCase) header() string {
	switch tc.contentType {
	case "":
		return "application/json"
	case "-":
		return ""
	}
	return tc.contentType
}

// TestCreateLargestID: the largest int64 is stored and read back exactly,
// not rounded through a float64 as a naive JSON decoder would.
func TestCreateLargestID(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, cfg config) {
		s := startServer(t, cfg)
		const body = `{"id":9223372036854775807,"name":"max","tag":"edge"}`
		for range 2 { // the second is an identical re-create
			if r := s.post(t, body); r.Status != http.StatusOK || string(r.Body) != `{"name":"max","tag":"edge"}` {
				t.Fatalf("POST %s = %d %s", body, r.Status, r.Body)
			}
		}
		r := s.post(t, `{"id":9223372036854775807,"name":"other","tag":"edge"}`)
		assertErrorMessage(t, r, http.StatusConflict, "plant 9223372036854775807 already exists with a different name or tag")
		// 9223372036854775806 is a different plant, which float64 rounding
		// would have merged with the largest.
		if r := s.post(t, `{"id":9223372036854775806,"name":"max-1"}`); r.Status != http.StatusOK {
			t.Fatalf("POST id 9223372036854775806 = %d %s", r.Status, r.Body)
		}
		assertStored(t, s, plant.Plant{ID: 9223372036854775807, Name: "max", Tag: plant.StringPtr("edge")})
		assertStored(t, s, plant.Plant{ID: 9223372036854775806, Name: "max-1"})
	})
}

func TestCreateBodyLimit(t *testing.T) {
	t.Parallel()
	forEachStore(t, func(t *testing.T, cfg config) {
		s := startServer(t, cfg)
		limit := int(cfg.Plants.MaxBodyBytes)
		tooLarge := fmt.Sprintf("request body is larger than the limit of %d bytes", limit)

		// A valid body of exactly the limit is accepted. Names are short
		// (at most 1024 characters): an unknown member makes up the size.
		prefix, suffix := `{"id":1,"name":"big","padding":"`, `"}`
		atLimit := prefix + strings.Repeat("n", limit-len(prefix)-len(suffix)) + suffix
		if r := s.post(t, atLimit); r.Status != http.StatusOK || string(r.Body) != `{"name":"big"}` {
			t.Fatalf("body of exactly %d bytes: %d %.100s", limit, r.Status, r.Body)
		}

		// One byte more is refused, whether the size is declared or not.
		assertErrorMessage(t, s.post(t, atLimit+" "), http.StatusRequestEntityTooLarge, tooLarge)
		twoMiB := prefix + strings.Repeat("n", 2<<20) + suffix
		assertErrorMessage(t, s.post(t, twoMiB), http.StatusRequestEntityTooLarge, tooLarge)
		req := s.request(t, http.MethodPost, "/plants", testToken, "application/json", nil)
		req.Body = io.NopCloser(strings.NewReader(twoMiB)) // no length: sent chunked
		req.ContentLength = -1
		req.GetBody = nil
		assertErrorMessage(t, s.do(t, req), http.StatusRequestEntityTooLarge, tooLarge)

		// What is stored is the accepted plant, not a refused one.
		assertStored(t, s, plant.Plant{ID: 1, Name: "big"})
	})
}

// TestCreateBodyLimitConfigured: --max-body-bytes sets the limit.
func TestCreateBodyLimitConfigured(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Plants.MaxBodyBytes = 64
	s := startServer(t, cfg)
	body := `{"id":1,"name":"` + strings.Repeat("x", 64-len(`{"id":1,"name":""}`)) + `"}`
	if r := s.post(t, body); r.Status != http.StatusOK {
		t.Fatalf("64-byte body: %d %s", r.Status, r.Body)
	}
	assertErrorMessage(t, s.post(t, body+"\n"), http.StatusRequestEntityTooLarge, "request body is larger than the limit of 64 bytes")
}

func TestUnknownPathAndMethod(t *testing.T) {
	t.Parallel()
	s := startServer(t, testConfig(t))
	for _, path := range []string{"/", "/plant", "/plants/", "/Plants", "/plants/1/leaves", "/v1/plants"} {
		r := s.do(t, s.request(t, http.MethodPost, path, testToken, "application/json", []byte(`{"id":1,"name":"a"}`)))
		assertErrorMessage(t, r, http.StatusNotFound, "no such path: "+path)
	}

	// Methods not served on /plants. (GET and DELETE are left out: later
	// operations serve them on /plants and /plants/{id}.)
	for _, method := range []string{http.MethodPut, http.MethodPatch} {
		r := s.do(t, s.request(t, method, "/plants", testToken, "application/json", []byte(`{"id":1,"name":"a"}`)))
		if r.Status != http.StatusMethodNotAllowed {
			t.Fatalf("%s /plants = %d %s, want 405", method, r.Status, r.Body)
		}
		allow := strings.Split(r.Header.Get("Allow"), ", ")
		if !slices.Contains(allow, http.MethodPost) || slices.Contains(allow, method) {
			t.Fatalf("%s /plants: Allow = %q, want a list with POST and without %s", method, r.Header.Get("Allow"), method)
		}
		assertErrorMessage(t, r, http.StatusMethodNotAllowed, "method "+method+" is not allowed here; allowed: "+r.Header.Get("Allow"))
		// Every method the answer allows is served.
		for _, allowed := range allow {
			r := s.do(t, s.request(t, allowed, "/plants", testToken, "application/json", []byte(`{"id":5,"name":"allowed"}`)))
			if r.Status == http.StatusMethodNotAllowed || r.Status == http.StatusNotFound {
				t.Fatalf("%s /plants, listed in Allow, answered %d", allowed, r.Status)
			}
		}
	}
}

// assertStored checks the store holds exactly want under want.ID.
func assertStored(t *testing.T, s *testServer, want plant.Plant) {
	t.Helper()
	got, err := s.Store.Get(context.Background(), want.ID)
	if err != nil {
		t.Fatalf("store.Get(%d): %v", want.ID, err)
	}
	if !got.Equal(want) {
		t.Fatalf("store.Get(%d) = %s, want %s", want.ID, showPlant(got), showPlant(want))
	}
}

func showPlant(p plant.Plant) string {
	if p.Tag == nil {
		return fmt.Sprintf("{id %d, name %q, no tag}", p.ID, p.Name)
	}
	return fmt.Sprintf("{id %d, name %q, tag %q}", p.ID, p.Name, *p.Tag)
}
