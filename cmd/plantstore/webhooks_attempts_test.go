package main

// The record of webhook attempts through the API, on bolt and on
// PostgreSQL, against a real receiver on loopback: a delivery answered
// 500 then 200 has both attempts on record with what the receiver
// answered; a dead letter redelivered through the API reaches the
// receiver with its webhook-id and its bytes; bad input is a 4xx with the
// Error body; a token without webhooks:manage gets 403.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/webhooks"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// webhookOperations are the API's webhook operations, with their paths'
// templates, which only a server with webhooks serves: their scope is
// held against the server by TestWebhookAttemptsOnRecord, against the
// document by TestOpenAPIDeclaresScopes.
var webhookOperations = []operation{
	{"attempts", http.MethodGet, "/webhooks/endpoints/{id}/attempts", "", principal.ScopeWebhooksManage, http.StatusOK},
	{"message", http.MethodGet, "/webhooks/messages/{id}", "", principal.ScopeWebhooksManage, http.StatusOK},
	{"redeliver", http.MethodPost, "/webhooks/messages/{id}/redeliver", "", principal.ScopeWebhooksManage, http.StatusAccepted},
}

// shownAttempt and shownMessage are the API's attempt and message.
type shownAttempt struct {
	ID        string  `json:"id"`
	WebhookID string  `json:"webhook_id"`
	Endpoint  string  `json:"endpoint"`
	Attempt   int     `json:"attempt"`
	At        string  `json:"at"`
	Succeeded bool    `json:"succeeded"`
	Status    int     `json:"status"`
	Error     string  `json:"error"`
	LatencyMS float64 `json:"latency_ms"`
	Answer    string  `json:"answer"`
}

type shownMessage struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	PlantID   int64           `json:"plant_id"`
	Version   int64           `json:"version"`
	CreatedAt string          `json:"created_at"`
	Endpoint  string          `json:"endpoint"`
	State     string          `json:"state"`
	Attempts  []shownAttempt  `json:"attempts"`
	Event     json.RawMessage `json:"event"`
}

// wantAttempt is what an attempt on record must say of the receiver's
// request req: its id, number and answer, exactly.
type wantAttempt struct {
	number int
	req    webhookstest.Request
	// endpoint is the attempt's endpoint; "" is the file's "crm".
	endpoint string
}

func checkAttempts(t *testing.T, what string, got []shownAttempt, want []wantAttempt) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d attempts %+v, want %d", what, len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		ok := w.req.Status >= 200 && w.req.Status < 300
		endpoint := w.endpoint
		if endpoint == "" {
			endpoint = "crm"
		}
		if g.WebhookID != w.req.ID || g.Endpoint != endpoint || g.Attempt != w.number || g.Status != w.req.Status ||
			g.Succeeded != ok || g.Error != "" || g.Answer != w.req.Answer || g.LatencyMS < 0 || g.ID == "" {
			t.Errorf("%s: attempt %d = %+v; want %s attempt %d answered %d %q", what, i, g, w.req.ID, w.number, w.req.Status, w.req.Answer)
		}
		if _, err := time.Parse(time.RFC3339Nano, g.At); err != nil {
			t.Errorf("%s: attempt %d's at %q: %v", what, i, g.At, err)
		}
	}
}

func TestWebhookAttemptsOnRecord(t *testing.T) {
	t.Parallel()
	for _, store := range []string{plants.StoreBolt, plants.StorePostgres} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			testWebhookAttemptsOnRecord(t, storeConfig(t, store))
		})
	}
}

func testWebhookAttemptsOnRecord(t *testing.T, cfg config) {
	const plantsOnly = "tok-plants-only-93ad"
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(plantsOnly+" plants:read plants:write\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Auth.TokensFile = tokens // testToken stays, with every scope
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	// Plant 1's event fails once; plant 2's fails until the test says.
	failing := make(chan struct{})
	r.SetAnswer(func(req webhookstest.Request, n int) (int, http.Header) {
		switch {
		case bytes.Contains(req.Body, []byte(`"id":1,`)) && n == 1:
			return http.StatusInternalServerError, nil
		case bytes.Contains(req.Body, []byte(`"id":2,`)):
			select {
			case <-failing:
			default:
				return http.StatusBadGateway, nil
			}
		}
		return http.StatusOK, nil
	})
	cfg.Webhooks.File = filepath.Join(dir, "webhooks.yaml")
	writeWebhooksFile(t, cfg.Webhooks.File, secret, map[string]*webhookstest.Receiver{"crm": r})
	cfg.Webhooks.AllowPrivate, cfg.Webhooks.AllowHTTP = true, true
	cfg.Webhooks.PollInterval = 20 * time.Millisecond
	cfg.Webhooks.Retries = webhooks.Schedule{50 * time.Millisecond} // two attempts, then a dead letter
	s := startServer(t, cfg)

	get := func(path, token string) response {
		t.Helper()
		return s.do(t, s.request(t, http.MethodGet, path, token, "", nil))
	}
	message := func(id string) shownMessage {
		t.Helper()
		resp := get("/webhooks/messages/"+id, testToken)
		if resp.Status != http.StatusOK {
			t.Fatalf("GET message %s = %d %s", id, resp.Status, resp.Body)
		}
		var m shownMessage
		resp.JSON(t, &m)
		return m
	}
	settled := func(id, state string, attempts int) shownMessage {
		t.Helper()
		var m shownMessage
		defer func() {
			if t.Failed() {
				t.Logf("message %s: %+v", id, m)
			}
		}()
		eventually(t, 20*time.Second, "message "+id+" "+state+" after "+fmt.Sprint(attempts)+" attempts", func() bool {
			m = message(id)
			return m.State == state && len(m.Attempts) == attempts
		})
		return m
	}
	requestsOf := func(id string) []webhookstest.Request {
		var out []webhookstest.Request
		for _, req := range r.Requests() {
			if req.ID == id {
				out = append(out, req)
			}
		}
		return out
	}

	// 500, then 200: two attempts on record, as the receiver answered them.
	if resp := s.post(t, `{"id":1,"name":"Rex","tag":"dog"}`); resp.Status != http.StatusOK {
		t.Fatalf("create = %d %s", resp.Status, resp.Body)
	}
	var first string
	eventually(t, 20*time.Second, "plant 1's event delivered", func() bool {
		for id, body := range r.Delivered() {
			if bytes.Contains(body, []byte(`"id":1,`)) {
				first = id
			}
		}
		return first != ""
	})
	m := settled(first, "delivered", 2)
	reqs := requestsOf(first)
	if len(reqs) != 2 || reqs[0].Status != 500 || reqs[1].Status != 200 {
		t.Fatalf("the receiver saw %+v, want 500 then 200", reqs)
	}
	if m.ID != first || m.Type != "plant.created" || m.PlantID != 1 || m.Version <= 0 || m.Endpoint != "crm" ||
		string(m.Event) != `{"id":1,"name":"Rex","tag":"dog"}` {
		t.Fatalf("message = %+v", m)
	}
	checkAttempts(t, "plant 1's message", m.Attempts, []wantAttempt{{number: 1, req: reqs[0]}, {number: 2, req: reqs[1]}})

	// The endpoint's attempts, newest first, filtered and paged.
	var list []shownAttempt
	resp := get("/webhooks/endpoints/crm/attempts", testToken)
	resp.JSON(t, &list)
	checkAttempts(t, "crm's attempts", list, []wantAttempt{{number: 2, req: reqs[1]}, {number: 1, req: reqs[0]}})
	if l := resp.Header.Get("Link"); l != "" {
		t.Fatalf("Link %q on the only page", l)
	}
	resp = get("/webhooks/endpoints/crm/attempts?status=failed", testToken)
	resp.JSON(t, &list)
	checkAttempts(t, "crm's failed attempts", list, []wantAttempt{{number: 1, req: reqs[0]}})
	resp = get("/webhooks/endpoints/crm/attempts?status=succeeded&limit=1", testToken)
	resp.JSON(t, &list)
	checkAttempts(t, "crm's succeeded attempts", list, []wantAttempt{{number: 2, req: reqs[1]}})
	resp = get("/webhooks/endpoints/crm/attempts?limit=1", testToken)
	resp.JSON(t, &list)
	checkAttempts(t, "crm's first page", list, []wantAttempt{{number: 2, req: reqs[1]}})
	next := "</webhooks/endpoints/crm/attempts?after=" + list[0].ID + `&limit=1>; rel="next"`
	if l := resp.Header.Get("Link"); l != next {
		t.Fatalf("Link = %q, want %q", l, next)
	}
	resp = get("/webhooks/endpoints/crm/attempts?after="+list[0].ID+"&limit=1", testToken)
	resp.JSON(t, &list)
	checkAttempts(t, "crm's second page", list, []wantAttempt{{number: 1, req: reqs[0]}})
	if l := resp.Header.Get("Link"); l != "" {
		t.Fatalf("Link %q on the last page", l)
	}

	// A dead letter, redelivered through the API: the same id and bytes.
	if resp := s.post(t, `{"id":2,"name":"Tom"}`); resp.Status != http.StatusOK {
		t.Fatalf("create = %d %s", resp.Status, resp.Body)
	}
	var second string
	eventually(t, 20*time.Second, "plant 2's event attempted", func() bool {
		for _, req := range r.Requests() {
			if bytes.Contains(req.Body, []byte(`"id":2,`)) {
				second = req.ID
			}
		}
		return second != ""
	})
	dead := settled(second, "dead", 2)
	close(failing)
	resp = s.do(t, s.request(t, http.MethodPost, "/webhooks/messages/"+second+"/redeliver?endpoint=crm", testToken, "", nil))
	if resp.Status != http.StatusAccepted {
		t.Fatalf("redeliver = %d %s, want 202", resp.Status, resp.Body)
	}
	var queued shownMessage
	resp.JSON(t, &queued)
	dead.State = "pending"
	if a, b := mustJSON(t, queued), mustJSON(t, dead); a != b {
		t.Fatalf("redeliver answered %s, want the dead letter made pending: %s", a, b)
	}
	m = settled(second, "delivered", 3)
	reqs = requestsOf(second)
	if len(reqs) != 3 || reqs[2].Status != 200 || !reqs[2].Verified || !bytes.Equal(reqs[2].Body, reqs[0].Body) || reqs[2].ID != second {
		t.Fatalf("the receiver saw %+v, want the dead letter again with its id and bytes, verified", reqs)
	}
	checkAttempts(t, "plant 2's message", m.Attempts, []wantAttempt{{number: 1, req: reqs[0]}, {number: 2, req: reqs[1]}, {number: 1, req: reqs[2]}})

	// A delivered message is sent again too.
	resp = s.do(t, s.request(t, http.MethodPost, "/webhooks/messages/"+first+"/redeliver", testToken, "", nil))
	if resp.Status != http.StatusAccepted {
		t.Fatalf("redeliver of a delivered message = %d %s, want 202", resp.Status, resp.Body)
	}
	settled(first, "delivered", 3)
	if reqs := requestsOf(first); len(reqs) != 3 || !bytes.Equal(reqs[2].Body, reqs[1].Body) {
		t.Fatalf("the receiver saw %+v, want plant 1's event a third time", reqs)
	}

	// Bad input, and a token without the scope.
	bad := func(method, path, token string, status int, msg string) {
		t.Helper()
		resp := s.do(t, s.request(t, method, path, token, "", nil))
		assertErrorMessage(t, resp, status, msg)
	}
	bad(http.MethodGet, "/webhooks/endpoints/crm/attempts?status=ok", testToken, 400, `query parameter "status" must be succeeded or failed, not "ok"`)
	bad(http.MethodGet, "/webhooks/endpoints/crm/attempts?status=failed&status=failed", testToken, 400, `query parameter "status" is given 2 times; give it at most once`)
	bad(http.MethodGet, "/webhooks/endpoints/crm/attempts?limit=0", testToken, 400, `query parameter "limit" must be a whole number from 1 to 1000, not "0"`)
	bad(http.MethodGet, "/webhooks/endpoints/crm/attempts?after=-1", testToken, 400, `query parameter "after" must be an attempt's id (a positive whole number), not "-1"`)
	bad(http.MethodGet, "/webhooks/endpoints/nobody/attempts", testToken, 404, `no webhook endpoint "nobody"`)
	bad(http.MethodGet, "/webhooks/messages/msg_nothing", testToken, 404, `no message has the webhook-id "msg_nothing" (or it is past the retention)`)
	bad(http.MethodPost, "/webhooks/messages/msg_nothing/redeliver", testToken, 404, `no message has the webhook-id "msg_nothing" (or it is past the retention)`)
	bad(http.MethodPost, "/webhooks/messages/"+first+"/redeliver?endpoint=other", testToken, 404,
		`the message "`+first+`" is not for the endpoint "other": a webhook-id names one endpoint's event`)
	bad(http.MethodGet, "/webhooks/messages/"+strings.Repeat("x", 257), testToken, 400, "the webhook-id must be valid text of at most 256 bytes")
	bad(http.MethodGet, "/webhooks/messages/%FF", testToken, 400, "the webhook-id must be valid text of at most 256 bytes")
	for _, op := range webhookOperations {
		path := strings.Replace(op.path, "{id}", first, 1)
		if op.name == "attempts" {
			path = strings.Replace(op.path, "{id}", "crm", 1)
		}
		resp := s.do(t, s.request(t, op.method, path, plantsOnly, "", nil))
		assertErrorMessage(t, resp, http.StatusForbidden, scopeMessage(principal.ScopeWebhooksManage))
		if got := resp.Header.Get("WWW-Authenticate"); got != scopeChallenge(principal.ScopeWebhooksManage) {
			t.Fatalf("WWW-Authenticate = %q", got)
		}
	}
	testWebhooksCLI(t, s, first, secret)
	m = settled(first, "delivered", 4) // the CLI's redelivery
}

// testWebhooksCLI runs plantstore webhooks attempts and redeliver against
// s, whose endpoint crm has attempts on record and whose message first is
// delivered: they print what the API answers, and never a secret.
func testWebhooksCLI(t *testing.T, s *testServer, first, secret string) {
	var outputs []string
	cli := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		code, stdout, stderr := runCLI(t, s, args...)
		if code != wantCode {
			t.Fatalf("plantstore %s = exit %d, stdout %q, stderr %q; want exit %d", strings.Join(args, " "), code, stdout, stderr, wantCode)
		}
		outputs = append(outputs, stdout, stderr)
		return stdout, stderr
	}
	sameAsAPI := func(stdout, path string) {
		t.Helper()
		var got, want []shownAttempt
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("stdout %q: %v", stdout, err)
		}
		s.do(t, s.request(t, http.MethodGet, path, testToken, "", nil)).JSON(t, &want)
		if a, b := mustJSON(t, got), mustJSON(t, want); a != b || len(want) == 0 {
			t.Fatalf("the CLI printed %s, the API answers %s", a, b)
		}
	}
	stdout, stderr := cli(0, "webhooks", "attempts", "crm", "--status", "failed")
	sameAsAPI(stdout, "/webhooks/endpoints/crm/attempts?status=failed")
	if stderr != "" {
		t.Fatalf("stderr %q", stderr)
	}
	stdout, stderr = cli(0, "webhooks", "attempts", "crm", "--limit", "1")
	sameAsAPI(stdout, "/webhooks/endpoints/crm/attempts?limit=1")
	var page []shownAttempt
	if err := json.Unmarshal([]byte(stdout), &page); err != nil || len(page) != 1 {
		t.Fatalf("one page: %q, %v", stdout, err)
	}
	if want := "more attempts: plantstore webhooks attempts crm --limit 1 --after " + page[0].ID + "\n"; stderr != want {
		t.Fatalf("stderr = %q, want %q", stderr, want)
	}
	stdout, _ = cli(0, "webhooks", "attempts", "crm", "--limit", "1", "-o", "table")
	if want := "ID  AT  WEBHOOK-ID  ATTEMPT  RESULT  LATENCY  ANSWER\n"; !strings.HasPrefix(strings.Join(strings.Fields(stdout), " "), strings.Join(strings.Fields(want), " ")) ||
		!strings.Contains(stdout, page[0].WebhookID) || !strings.Contains(stdout, `"`+page[0].Answer[:30]) { // a table clips an answer to 40 characters
		t.Fatalf("-o table printed %q, want the header and the attempt %s with its answer", stdout, page[0].ID)
	}
	stdout, _ = cli(0, "webhooks", "message", first, "-o", "table")
	if !strings.HasPrefix(stdout, first+"  plant.created  plant 1  version ") {
		t.Fatalf("message -o table printed %q", stdout)
	}
	stdout, _ = cli(0, "webhooks", "redeliver", first)
	var m shownMessage
	if err := json.Unmarshal([]byte(stdout), &m); err != nil || m.ID != first || m.State != "pending" || len(m.Attempts) != 3 {
		t.Fatalf("redeliver printed %q (%v), want %s pending with its 3 attempts", stdout, err, first)
	}
	_, stderr = cli(1, "webhooks", "attempts", "nobody")
	if want := "plantstore webhooks attempts: 404 Not Found: no webhook endpoint \"nobody\"\n"; stderr != want {
		t.Fatalf("stderr = %q, want %q", stderr, want)
	}
	_, stderr = cli(1, "webhooks", "redeliver", "msg_nothing")
	if want := "plantstore webhooks redeliver: 404 Not Found: no message has the webhook-id \"msg_nothing\" (or it is past the retention)\n"; stderr != want {
		t.Fatalf("stderr = %q, want %q", stderr, want)
	}
	_, stderr = cli(2, "webhooks", "attempts", "crm", "--status", "ok")
	if want := "plantstore webhooks attempts: --status \"ok\": want succeeded or failed\n"; stderr != want {
		t.Fatalf("stderr = %q, want %q", stderr, want)
	}
	for _, out := range outputs {
		if strings.Contains(out, secret) || strings.Contains(out, strings.TrimPrefix(secret, "whsec_")) || strings.Contains(out, testToken) {
			t.Fatalf("a CLI output holds a secret: %q", out)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
