package main

// Black-box tests of the webhook endpoints as resources (--webhooks-api):
// the full lifecycle with exact statuses and bodies on bolt and postgres,
// every answer validated against the OpenAPI document; deliveries to an
// endpoint made through the API, verified with its secret and then with
// both of a rotation's; bad input; the scope; and no secret in any output
// but the two answers that give one.

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"go.uber.org/fx"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/webhooks"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// endpointResource is an endpoint as the API shows it.
type endpointResource struct {
	ID             string   `json:"id"`
	Source         string   `json:"source"`
	URL            string   `json:"url"`
	Description    string   `json:"description"`
	Format         string   `json:"format"`
	Events         []string `json:"events"`
	Enabled        bool     `json:"enabled"`
	DisabledReason string   `json:"disabled_reason"`
	Secrets        []struct {
		Fingerprint string     `json:"fingerprint"`
		ExpiresAt   *time.Time `json:"expires_at"`
	} `json:"secrets"`
	CreatedAt *time.Time `json:"created_at"`
	UpdatedAt *time.Time `json:"updated_at"`
	Secret    string     `json:"secret"`
}

// webhooksAPIConfig is a config on store with the endpoints API on, a
// webhooks file of one endpoint ("crm", to receiver), and a tokens file
// with a token of plants scopes only (readerToken).
func webhooksAPIConfig(t *testing.T, store string, crm *webhookstest.Receiver, secret string) config {
	t.Helper()
	cfg := storeConfig(t, store)
	dir := t.TempDir()
	file := filepath.Join(dir, "webhooks.yaml")
	writeWebhooksFile(t, file, secret, map[string]*webhookstest.Receiver{"crm": crm})
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(plantsOnlyToken+" plants:read plants:write\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Auth.TokensFile = tokens
	cfg.Webhooks = webhooks.Config{File: file, API: true, AllowPrivate: true, AllowHTTP: true,
		PollInterval: 50 * time.Millisecond, DisableAfter: webhooks.DefaultDisableAfter}
	return cfg
}

// plantsOnlyToken holds the plants' scopes, not webhooks:manage.
const plantsOnlyToken = "tok-plants-only-93c1"

func TestWebhookEndpoints(t *testing.T) {
	t.Parallel()
	for _, store := range []string{plants.StoreBolt, plants.StorePostgres} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			testWebhookEndpointsLifecycle(t, store)
		})
	}
}

func testWebhookEndpointsLifecycle(t *testing.T, store string) {
	fileSecret := webhookstest.NewSecret()
	crm := webhookstest.NewReceiver(t, fileSecret)
	cfg := webhooksAPIConfig(t, store, crm, fileSecret)
	core, logs := observer.New(zapcore.DebugLevel)
	s := startServer(t, cfg, fx.Decorate(func(*zap.Logger) *zap.Logger { return zap.New(core) }))
	var outputs []string // every answer but those that give a secret, for the search at the end
	call := func(method, path, contentType, body string, header ...string) response {
		t.Helper()
		req := s.request(t, method, path, testToken, contentType, []byte(body))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		r := s.do(t, req)
		return r
	}
	keep := func(r response) response {
		outputs = append(outputs, string(r.Body), headerText(r.Header))
		return r
	}

	// The receiver of the API's endpoint; its secret is the create's.
	rcv := webhookstest.NewReceiver(t, webhookstest.NewSecret())
	created := call(http.MethodPost, "/webhooks/endpoints", "application/json",
		`{"url":"`+rcv.URL+`","description":"the shop","format":"envelope","events":["plant.created","plant.deleted"]}`)
	if created.Status != http.StatusCreated {
		t.Fatalf("create = %d %s", created.Status, created.Body)
	}
	var ep endpointResource
	created.JSON(t, &ep)
	if !regexp.MustCompile(`^ep_[2-7a-z]{26}$`).MatchString(ep.ID) {
		t.Fatalf("id %q, want ep_ and 26 digits and lowercase letters", ep.ID)
	}
	if got := created.Header.Get("Location"); got != "/webhooks/endpoints/"+ep.ID {
		t.Fatalf("Location = %q", got)
	}
	secret := ep.Secret
	if !regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{43}=$`).MatchString(secret) {
		t.Fatalf("the create's secret %q is not whsec_ and 32 bytes", secret)
	}
	if ep.Source != "api" || ep.URL != rcv.URL || ep.Description != "the shop" || ep.Format != "envelope" ||
		strings.Join(ep.Events, ",") != "plant.created,plant.deleted" || !ep.Enabled || ep.DisabledReason != "" ||
		len(ep.Secrets) != 1 || !regexp.MustCompile(`^sha256:[0-9a-f]{16}$`).MatchString(ep.Secrets[0].Fingerprint) ||
		ep.Secrets[0].ExpiresAt != nil || ep.CreatedAt == nil || !ep.CreatedAt.Equal(*ep.UpdatedAt) {
		t.Fatalf("created %s", created.Body)
	}
	etag := created.Header.Get("ETag")

	// GET shows it as the create did, without the secret.
	got := keep(call(http.MethodGet, "/webhooks/endpoints/"+ep.ID, "", ""))
	if got.Status != http.StatusOK || got.Header.Get("ETag") != etag {
		t.Fatalf("get = %d %s (ETag %q, want %q)", got.Status, got.Body, got.Header.Get("ETag"), etag)
	}
	withoutSecret := ep
	withoutSecret.Secret = ""
	want, _ := json.Marshal(withoutSecret)
	var shown endpointResource
	got.JSON(t, &shown)
	if again, _ := json.Marshal(shown); string(again) != string(want) {
		t.Fatalf("get shows %s, want %s", again, want)
	}
	if r := call(http.MethodGet, "/webhooks/endpoints/"+ep.ID, "", "", "If-None-Match", etag); r.Status != http.StatusNotModified {
		t.Fatalf("get If-None-Match its ETag = %d", r.Status)
	}
	assertError(t, keep(call(http.MethodGet, "/webhooks/endpoints/ep_none", "", "")), http.StatusNotFound)

	// The list: the file's endpoint beside the API's, in id order, paged.
	list := keep(call(http.MethodGet, "/webhooks/endpoints", "", ""))
	var listed []endpointResource
	list.JSON(t, &listed)
	if list.Status != http.StatusOK || len(listed) != 2 || listed[0].ID != "crm" || listed[0].Source != "file" ||
		listed[0].URL != crm.URL || listed[0].Format != "origin" || strings.Join(listed[0].Events, ",") != "plant.created" ||
		!listed[0].Enabled || len(listed[0].Secrets) != 1 || listed[0].CreatedAt != nil || listed[1].ID != ep.ID {
		t.Fatalf("list = %d %s", list.Status, list.Body)
	}
	page := keep(call(http.MethodGet, "/webhooks/endpoints?limit=1", "", ""))
	if link := page.Header.Get("Link"); link != `</webhooks/endpoints?after=crm&limit=1>; rel="next"` {
		t.Fatalf("first page's Link = %q", link)
	}
	page = keep(call(http.MethodGet, "/webhooks/endpoints?after=crm&limit=1", "", ""))
	listed = nil
	page.JSON(t, &listed)
	if len(listed) != 1 || listed[0].ID != ep.ID || page.Header.Get("Link") != "" {
		t.Fatalf("second page = %s, Link %q", page.Body, page.Header.Get("Link"))
	}

	// A create is delivered to both, the API's signed with its secret.
	if r := keep(s.post(t, `{"id":1,"name":"Monstera"}`)); r.Status != http.StatusOK {
		t.Fatalf("create plant = %d", r.Status)
	}
	first := awaitDelivery(t, rcv, 1)
	verifyWith(t, first, secret)
	if !strings.Contains(string(first.Body), `"type":"plant.created"`) {
		t.Fatalf("delivered %s", first.Body)
	}
	awaitDelivery(t, crm, 1)

	// PATCH: a stale If-Match is refused; a merge patch changes what it names.
	assertError(t, keep(call(http.MethodPatch, "/webhooks/endpoints/"+ep.ID, "application/merge-patch+json", `{"description":"x"}`,
		"If-Match", `"AAAAAAAAAAAAAAAAAAAAAA"`)), http.StatusPreconditionFailed)
	patched := keep(call(http.MethodPatch, "/webhooks/endpoints/"+ep.ID, "application/merge-patch+json",
		`{"description":null,"events":["plant.created","plant.updated","plant.deleted"]}`, "If-Match", etag))
	var after endpointResource
	patched.JSON(t, &after)
	if patched.Status != http.StatusOK || after.Description != "" || len(after.Events) != 3 || patched.Header.Get("ETag") == etag ||
		!after.CreatedAt.Equal(*ep.CreatedAt) || after.Secrets[0].Fingerprint != ep.Secrets[0].Fingerprint {
		t.Fatalf("patch = %d %s", patched.Status, patched.Body)
	}

	// The file's endpoint is read-only.
	for _, r := range []response{
		keep(call(http.MethodPatch, "/webhooks/endpoints/crm", "application/json", `{"enabled":false}`)),
		keep(call(http.MethodDelete, "/webhooks/endpoints/crm", "", "")),
		keep(call(http.MethodPost, "/webhooks/endpoints/crm/rotate", "", "")),
	} {
		assertErrorMessage(t, r, http.StatusConflict, `the endpoint "crm" comes from the webhooks file, read-only through the API: change the file`)
	}

	// Rotation: a new secret, once; both sign for the overlap.
	rotated := call(http.MethodPost, "/webhooks/endpoints/"+ep.ID+"/rotate", "application/json", `{"overlap":"1h"}`)
	var rot endpointResource
	rotated.JSON(t, &rot)
	if rotated.Status != http.StatusOK || rot.Secret == "" || rot.Secret == secret || len(rot.Secrets) != 2 ||
		rot.Secrets[0].ExpiresAt != nil || rot.Secrets[1].Fingerprint != ep.Secrets[0].Fingerprint || rot.Secrets[1].ExpiresAt == nil ||
		rot.Secrets[1].ExpiresAt.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("rotate = %d %s", rotated.Status, rotated.Body)
	}
	if r := keep(s.post(t, `{"id":2,"name":"Fern"}`)); r.Status != http.StatusOK {
		t.Fatalf("create plant = %d", r.Status)
	}
	second := awaitDelivery(t, rcv, 2)
	if n := len(strings.Fields(second.Signature)); n != 2 {
		t.Fatalf("during the overlap, %d signatures: %q", n, second.Signature)
	}
	verifyWith(t, second, secret)
	verifyWith(t, second, rot.Secret)

	// Disabled, its events wait; enabled again, they are sent.
	disabled := keep(call(http.MethodPatch, "/webhooks/endpoints/"+ep.ID, "application/json", `{"enabled":false}`))
	if disabled.Status != http.StatusOK || !strings.Contains(string(disabled.Body), `"enabled":false`) {
		t.Fatalf("disable = %d %s", disabled.Status, disabled.Body)
	}
	waitApplied(t, s, ep.ID, true)
	if r := keep(s.post(t, `{"id":3,"name":"Palm"}`)); r.Status != http.StatusOK {
		t.Fatalf("create plant = %d", r.Status)
	}
	enabled := keep(call(http.MethodPatch, "/webhooks/endpoints/"+ep.ID, "application/json", `{"enabled":true}`))
	if enabled.Status != http.StatusOK {
		t.Fatalf("enable = %d %s", enabled.Status, enabled.Body)
	}
	third := awaitDelivery(t, rcv, 3)
	if !strings.Contains(string(third.Body), `"name":"Palm"`) {
		t.Fatalf("after the enable, delivered %s", third.Body)
	}

	// Delete: 204, then gone.
	assertError(t, keep(call(http.MethodDelete, "/webhooks/endpoints/"+ep.ID, "", "", "If-Match", etag)), http.StatusPreconditionFailed)
	if r := keep(call(http.MethodDelete, "/webhooks/endpoints/"+ep.ID, "", "")); r.Status != http.StatusNoContent || len(r.Body) != 0 {
		t.Fatalf("delete = %d %s", r.Status, r.Body)
	}
	assertErrorMessage(t, keep(call(http.MethodGet, "/webhooks/endpoints/"+ep.ID, "", "")), http.StatusNotFound, `no webhook endpoint "`+ep.ID+`"`)
	assertError(t, keep(call(http.MethodDelete, "/webhooks/endpoints/"+ep.ID, "", "")), http.StatusNotFound)

	// The scope.
	r := keep(s.do(t, s.request(t, http.MethodGet, "/webhooks/endpoints", plantsOnlyToken, "", nil)))
	assertErrorMessage(t, r, http.StatusForbidden, scopeMessage("webhooks:manage"))
	if got := r.Header.Get("WWW-Authenticate"); got != scopeChallenge("webhooks:manage") {
		t.Fatalf("WWW-Authenticate = %q", got)
	}

	// No secret anywhere but in the create's and the rotation's answers:
	// not in any other answer, log line or metric.
	outputs = append(outputs, scrape(t, s, false))
	for _, entry := range logs.All() {
		line, _ := json.Marshal(entry.ContextMap())
		outputs = append(outputs, entry.Message, string(line))
	}
	for _, sec := range []string{secret, rot.Secret, fileSecret} {
		key := strings.TrimPrefix(sec, "whsec_")
		for _, out := range outputs {
			if strings.Contains(out, key[:16]) {
				t.Fatalf("a secret shows in an output: %.300s", out)
			}
		}
	}
}

// TestWebhookEndpointsRefuseBadInput: every field's bounds get a 400 with
// the Error body naming what is wrong, and nothing is created.
func TestWebhookEndpointsRefuseBadInput(t *testing.T) {
	t.Parallel()
	secret := webhookstest.NewSecret()
	cfg := webhooksAPIConfig(t, plants.StoreBolt, webhookstest.NewReceiver(t, secret), secret)
	cfg.Webhooks.AllowPrivate, cfg.Webhooks.AllowHTTP = false, false
	writeFileAtomically(t, cfg.Webhooks.File, "endpoints:\n  - name: crm\n    url: https://crm.example/hooks\n    secrets: ["+secret+"]\n")
	s := startServer(t, cfg)
	long := strings.Repeat("a", 257)
	for _, tc := range []struct{ body, message string }{
		{``, "the body must be one JSON object"},
		{`[]`, "the body must be one JSON object"},
		{`null`, "the body must be one JSON object"},
		{`{"url":"https://a.example"} {}`, "the body must be one JSON object, with nothing after it"},
		{`{}`, "url: required, the https URL events are sent to"},
		{`{"url":5}`, "url: must be text"},
		{`{"url":"https://a.example","secret":"whsec_x"}`, `unknown field "secret" (url, description, format, events and enabled)`},
		{`{"url":"http://a.example/hooks"}`, "url: plain http is refused (use https, or --webhooks-allow-http for development)"},
		{`{"url":"ftp://a.example/hooks"}`, "url: must be an https URL"},
		{`{"url":"https:///hooks"}`, "url: has no host"},
		{`{"url":"https://a.example/#x"}`, "url: must not have a fragment"},
		{`{"url":"https://a.example/` + strings.Repeat("p", 2048) + `"}`, "url: at most 2048 bytes, not 2066"},
		{`{"url":"https://127.0.0.1/hooks"}`, "url: 127.0.0.1 is a loopback address, an internal destination (--webhooks-allow-private allows it, for development)"},
		{`{"url":"https://169.254.169.254/"}`, "url: 169.254.169.254 is a link-local address, an internal destination (--webhooks-allow-private allows it, for development)"},
		{`{"url":"https://localhost/"}`, "url: localhost is an internal destination (--webhooks-allow-private allows it, for development)"},
		{`{"url":"https://a.example","description":"` + long + `"}`, "description: at most 256 bytes, not 257"},
		{`{"url":"https://a.example","description":"a\u0007b"}`, "description: must be text without control characters"},
		{`{"url":"https://a.example","format":"xml"}`, `format: "xml" is not a format (origin, envelope)`},
		{`{"url":"https://a.example","format":"envelope","events":["plant.eaten"]}`, `events: "plant.eaten" is not an event (plant.created, plant.updated, plant.deleted)`},
		{`{"url":"https://a.example","format":"envelope","events":[]}`, "events: list at least one, or leave events out for every event of the format"},
		{`{"url":"https://a.example","format":"envelope","events":["plant.created","plant.created"]}`, `events: "plant.created" is listed twice`},
		{`{"url":"https://a.example","events":["plant.deleted"]}`, `events: "plant.deleted" is sent in envelopes only: set "format": "envelope" (the origin format's body is the created plant, for plant.created alone)`},
		{`{"url":"https://a.example","enabled":"yes"}`, "enabled: must be true or false"},
		{`{"url":"https://a.example","events":"plant.created"}`, "events: must be a list of events, or null for every event of the format"},
	} {
		r := s.do(t, s.request(t, http.MethodPost, "/webhooks/endpoints", testToken, "application/json", []byte(tc.body)))
		assertErrorMessage(t, r, http.StatusBadRequest, tc.message)
	}
	if r := s.do(t, s.request(t, http.MethodPost, "/webhooks/endpoints", testToken, "text/plain", []byte(`{}`))); r.Status != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain = %d", r.Status)
	}
	for _, q := range []string{"limit=0", "limit=1001", "limit=05", "after=A", "limit=1&limit=2"} {
		assertError(t, s.do(t, s.request(t, http.MethodGet, "/webhooks/endpoints?"+q, testToken, "", nil)), http.StatusBadRequest)
	}
	var listed []endpointResource
	r := s.do(t, s.request(t, http.MethodGet, "/webhooks/endpoints", testToken, "", nil))
	r.JSON(t, &listed)
	if len(listed) != 1 || listed[0].ID != "crm" {
		t.Fatalf("after the refusals, the endpoints are %s", r.Body)
	}

	// A made endpoint's patch and rotation have their bounds too.
	made := s.do(t, s.request(t, http.MethodPost, "/webhooks/endpoints", testToken, "application/json", []byte(`{"url":"https://a.example/hooks"}`)))
	var ep endpointResource
	made.JSON(t, &ep)
	path := "/webhooks/endpoints/" + ep.ID
	for _, tc := range []struct{ method, path, body, message string }{
		{http.MethodPatch, path, `{"url":null}`, "url: must be text"},
		{http.MethodPatch, path, `{"enabled":null}`, "enabled: must be true or false"},
		{http.MethodPatch, path, `{"events":"plant.created"}`, "events: must be a list of events, or null for every event of the format"},
		{http.MethodPatch, path, `{"id":"ep_other"}`, `unknown field "id" (url, description, format, events and enabled)`},
		{http.MethodPatch, path, `{"url":"https://10.0.0.1/"}`, "url: 10.0.0.1 is a private address, an internal destination (--webhooks-allow-private allows it, for development)"},
		{http.MethodPost, path + "/rotate", `{"overlap":"forever"}`, `overlap: a duration from 0s to 168h0m0s, such as "24h"`},
		{http.MethodPost, path + "/rotate", `{"overlap":"169h"}`, `overlap: a duration from 0s to 168h0m0s, such as "24h"`},
		{http.MethodPost, path + "/rotate", `{"overlap":"-1s"}`, `overlap: a duration from 0s to 168h0m0s, such as "24h"`},
	} {
		assertErrorMessage(t, s.do(t, s.request(t, tc.method, tc.path, testToken, "application/json", []byte(tc.body))), http.StatusBadRequest, tc.message)
	}
	// Three rotations with an overlap leave four secrets signing; a fourth
	// is refused, and one without an overlap drops the others.
	for range 3 {
		if r := s.do(t, s.request(t, http.MethodPost, path+"/rotate", testToken, "", nil)); r.Status != http.StatusOK {
			t.Fatalf("rotate = %d %s", r.Status, r.Body)
		}
	}
	assertError(t, s.do(t, s.request(t, http.MethodPost, path+"/rotate", testToken, "", nil)), http.StatusConflict)
	r = s.do(t, s.request(t, http.MethodPost, path+"/rotate", testToken, "application/json", []byte(`{"overlap":"0s"}`)))
	var rot endpointResource
	r.JSON(t, &rot)
	if r.Status != http.StatusOK || len(rot.Secrets) != 1 || rot.Secrets[0].ExpiresAt != nil {
		t.Fatalf("rotate with no overlap = %d %s", r.Status, r.Body)
	}
}

// awaitDelivery waits for the receiver's n-th 2xx request and returns it.
func awaitDelivery(t *testing.T, r *webhookstest.Receiver, n int) webhookstest.Request {
	t.Helper()
	var got []webhookstest.Request
	eventually(t, 30*time.Second, "delivery", func() bool {
		got = got[:0]
		for _, req := range r.Requests() {
			if req.Status/100 == 2 {
				got = append(got, req)
			}
		}
		return len(got) >= n
	})
	return got[n-1]
}

// verifyWith checks req's signature with secret, by the Standard Webhooks
// library.
func verifyWith(t *testing.T, req webhookstest.Request, secret string) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(req.Body, req.Header); err != nil {
		t.Fatalf("the request %s does not verify with the secret: %v", req.ID, err)
	}
}

// waitApplied waits until the endpoint id is paused (or not) on s, as
// its metric says.
func waitApplied(t *testing.T, s *testServer, id string, paused bool) {
	t.Helper()
	want := `plantstore_webhook_endpoint_gone{endpoint="` + id + `"} 0`
	if paused {
		want = `plantstore_webhook_endpoint_gone{endpoint="` + id + `"} 1`
	}
	eventually(t, 30*time.Second, want, func() bool { return strings.Contains(scrape(t, s, false), want) })
}

func headerText(h http.Header) string {
	var b strings.Builder
	_ = h.Write(&b)
	return b.String()
}

// TestWebhookEndpointsTwoPostgresReplicas: an endpoint made on one replica
// is sent the changes made on either, once the other has read it (within
// a second: the test waits with a deadline, it does not time it); its
// delete stops both: a change made on either after they have applied the
// delete writes no event for it.
func TestWebhookEndpointsTwoPostgresReplicas(t *testing.T) {
	t.Parallel()
	fileSecret := webhookstest.NewSecret()
	crm := webhookstest.NewReceiver(t, fileSecret)
	cfgA := webhooksAPIConfig(t, plants.StorePostgres, crm, fileSecret)
	cfgB := cfgA
	cfgB.Plants.Postgres.URL = cfgA.Plants.Postgres.URL
	a, b := startServer(t, cfgA), startServer(t, cfgB)

	rcv := webhookstest.NewReceiver(t, webhookstest.NewSecret())
	created := a.do(t, a.request(t, http.MethodPost, "/webhooks/endpoints", testToken, "application/json", []byte(`{"url":"`+rcv.URL+`"}`)))
	var ep endpointResource
	created.JSON(t, &ep)
	if created.Status != http.StatusCreated {
		t.Fatalf("create = %d %s", created.Status, created.Body)
	}
	waitApplied(t, b, ep.ID, false)
	for i, s := range []*testServer{a, b} {
		if r := s.post(t, `{"id":`+string(rune('1'+i))+`,"name":"from replica `+string(rune('a'+i))+`"}`); r.Status != http.StatusOK {
			t.Fatalf("create plant = %d", r.Status)
		}
	}
	awaitDelivery(t, rcv, 2)
	bodies := map[string]bool{}
	for _, req := range rcv.Requests() {
		verifyWith(t, req, ep.Secret)
		bodies[string(req.Body)] = true
	}
	if !bodies[`{"id":1,"name":"from replica a"}`] || !bodies[`{"id":2,"name":"from replica b"}`] {
		t.Fatalf("delivered %v, want both replicas' creates", bodies)
	}

	if r := a.do(t, a.request(t, http.MethodDelete, "/webhooks/endpoints/"+ep.ID, testToken, "", nil)); r.Status != http.StatusNoContent {
		t.Fatalf("delete = %d %s", r.Status, r.Body)
	}
	eventually(t, 30*time.Second, "replica b drops the endpoint", func() bool {
		return !strings.Contains(scrape(t, b, false), `plantstore_webhook_endpoint_gone{endpoint="`+ep.ID+`"}`)
	})
	for i, s := range []*testServer{a, b} {
		if r := s.post(t, `{"id":`+string(rune('3'+i))+`,"name":"after the delete"}`); r.Status != http.StatusOK {
			t.Fatalf("create plant = %d", r.Status)
		}
	}
	// The file's endpoint gets both creates; by then no event for the
	// deleted endpoint was written, so none can arrive.
	awaitDelivery(t, crm, 4)
	if n := len(rcv.Requests()); n != 2 {
		t.Fatalf("the deleted endpoint got %d requests, want the 2 before its delete", n)
	}
}

// TestWebhookEndpointGoneIsDisabled: an endpoint made through the API that
// answers 410 is disabled, and its resource says so; its events wait, and
// enabled again it gets them, the one it answered 410 included, each
// acknowledged once.
func TestWebhookEndpointGoneIsDisabled(t *testing.T) {
	t.Parallel()
	fileSecret := webhookstest.NewSecret()
	s := startServer(t, webhooksAPIConfig(t, plants.StoreBolt, webhookstest.NewReceiver(t, fileSecret), fileSecret))
	rcv := webhookstest.NewReceiver(t, webhookstest.NewSecret())
	rcv.SetAnswer(func(webhookstest.Request, int) (int, http.Header) { return http.StatusGone, nil })
	created := s.do(t, s.request(t, http.MethodPost, "/webhooks/endpoints", testToken, "application/json", []byte(`{"url":"`+rcv.URL+`"}`)))
	var ep endpointResource
	created.JSON(t, &ep)
	if r := s.post(t, `{"id":1,"name":"Monstera"}`); r.Status != http.StatusOK {
		t.Fatalf("create plant = %d", r.Status)
	}
	var shown endpointResource
	eventually(t, 30*time.Second, "the endpoint is disabled", func() bool {
		r := s.do(t, s.request(t, http.MethodGet, "/webhooks/endpoints/"+ep.ID, testToken, "", nil))
		r.JSON(t, &shown)
		return !shown.Enabled
	})
	if shown.DisabledReason != "the endpoint answered 410 Gone" {
		t.Fatalf("disabled_reason = %q", shown.DisabledReason)
	}
	if r := s.post(t, `{"id":2,"name":"Fern"}`); r.Status != http.StatusOK {
		t.Fatalf("create plant = %d", r.Status)
	}
	rcv.SetAnswer(nil)
	r := s.do(t, s.request(t, http.MethodPatch, "/webhooks/endpoints/"+ep.ID, testToken, "application/json", []byte(`{"enabled":true}`)))
	var enabled endpointResource
	r.JSON(t, &enabled)
	if r.Status != http.StatusOK || !enabled.Enabled || enabled.DisabledReason != "" {
		t.Fatalf("enable = %d %s", r.Status, r.Body)
	}
	awaitDelivery(t, rcv, 2)
	delivered := rcv.Delivered()
	var bodies []string
	for _, body := range delivered {
		bodies = append(bodies, string(body))
	}
	slices.Sort(bodies)
	if strings.Join(bodies, " ") != `{"id":1,"name":"Monstera"} {"id":2,"name":"Fern"}` {
		t.Fatalf("delivered %v, want both plants", bodies)
	}
}
