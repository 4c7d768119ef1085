package main

import (
	"net/http/httptest"
	"testing"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/webhooks"
)

// FuzzWebhookEndpointsRequest is FuzzHTTPRequest for the webhook
// endpoints (--webhooks-api) on bolt and a real PostgreSQL: whatever the
// request, no 5xx, the security headers, and an answer the OpenAPI
// document describes. The stores are not compared: each endpoint has an id
// of its own. The seed corpus runs with `make test`; to fuzz:
//
//	go test -run '^$' -fuzz '^FuzzWebhookEndpointsRequest$' -fuzztime 30s ./cmd/plantstore
func FuzzWebhookEndpointsRequest(f *testing.F) {
	const json = "Content-Type: application/json"
	for _, seed := range []struct{ method, target, headers, body string }{
		{"POST", "/webhooks/endpoints", json, `{"url":"https://hooks.example/a","format":"envelope","events":["plant.updated"]}`},
		{"POST", "/webhooks/endpoints", json, `{"url":"https://10.1.2.3/","description":"\u0000"}`},
		{"POST", "/webhooks/endpoints", json, `{"url":"https://[::ffff:127.0.0.1]/"}`},
		{"POST", "/webhooks/endpoints", json, `{"url":"https://a.example","events":null,"enabled":null}`},
		{"POST", "/webhooks/endpoints", json, "{\"url\":\"https://a.example\",\"description\":\"\xff\"}"},
		{"POST", "/webhooks/endpoints", json, `{"url":"https://a.example"}{"url":"x"}`},
		{"POST", "/webhooks/endpoints", "Content-Type: application/merge-patch+json", `{"url":"https://a.example"}`},
		{"GET", "/webhooks/endpoints?limit=2&after=ep_", "", ""},
		{"GET", "/webhooks/endpoints?after=%ff", "", ""},
		{"GET", "/webhooks/endpoints/ep_none", "If-None-Match: *", ""},
		{"GET", "/webhooks/endpoints/..%2f", "", ""},
		{"PATCH", "/webhooks/endpoints/ep_none", "Content-Type: application/merge-patch+json\r\nIf-Match: W/\"x\"", `{"enabled":true}`},
		{"PATCH", "/webhooks/endpoints/ep_none", json, `{"events":[1]}`},
		{"DELETE", "/webhooks/endpoints/ep_none", "If-Match: \"bad", ""},
		{"POST", "/webhooks/endpoints/ep_none/rotate", json, `{"overlap":"9999999999h"}`},
		{"POST", "/webhooks/endpoints/ep_none/rotate", "", ""},
		{"PUT", "/webhooks/endpoints", json, `{}`},
	} {
		f.Add(seed.method, seed.target, seed.headers, []byte(seed.body))
	}
	stores := []fuzzStore{}
	for _, name := range []string{plants.StoreBolt, plants.StorePostgres} {
		cfg := testConfig(f)
		cfg.Plants.Store = name
		if name == plants.StorePostgres {
			cfg.Plants.Postgres.URL = pgtest.NewDatabase(f)
		}
		cfg.Webhooks = webhooks.Config{API: true}
		stores = append(stores, fuzzStore{name, startedAPIHandler(f, cfg)})
	}
	f.Fuzz(func(t *testing.T, method, target, headers string, body []byte) {
		for _, store := range stores {
			req, ok := buildRequest(method, target, headers, body, true)
			if !ok {
				return
			}
			rec := httptest.NewRecorder()
			store.api.ServeHTTP(rec, req)
			r := response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
			if r.Status >= 500 {
				t.Fatalf("%s: %s %q answered %d %s", store.name, method, target, r.Status, r.Body)
			}
			if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("%s: %s %q answered %d without the security headers: %v", store.name, method, target, r.Status, r.Header)
			}
			validateResponse(t, req, r)
		}
	})
}
