package main

// Black-box tests of scopes: each operation with each kind of token, from
// the tokens file (with and without scopes) and from a JWT issuer.

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/auth/principal"
)

// scopeChallenge is the 403's WWW-Authenticate for scope (RFC 6750 §3.1).
func scopeChallenge(scope string) string {
	return `Bearer error="insufficient_scope", scope="` + scope + `"`
}

func scopeMessage(scope string) string {
	return "this token lacks the scope " + scope + " that the operation requires"
}

// operation is one API operation and the scope it requires.
type operation struct {
	name, method, path, body string
	scope                    string
	ok                       int // the status with the scope
}

// operations are every API operation; each runs on a plant that exists
// (id 1), so that the status with the scope is a success.
var operations = []operation{
	{"list", http.MethodGet, "/plants", "", principal.ScopePlantsRead, http.StatusOK},
	{"changes", http.MethodGet, "/plants/changes", "", principal.ScopePlantsRead, http.StatusOK},
	{"get", http.MethodGet, "/plants/1", "", principal.ScopePlantsRead, http.StatusOK},
	{"head", http.MethodHead, "/plants/1", "", principal.ScopePlantsRead, http.StatusOK},
	{"create", http.MethodPost, "/plants", `{"id":1,"name":"Monstera"}`, principal.ScopePlantsWrite, http.StatusOK},
	{"update", http.MethodPut, "/plants/1", `{"name":"Monstera"}`, principal.ScopePlantsWrite, http.StatusOK},
	{"delete", http.MethodDelete, "/plants/1", "", principal.ScopePlantsWrite, http.StatusNoContent},
	{"import", http.MethodPost, "/plants:import", `{"id":1,"name":"Monstera"}` + "\n", principal.ScopePlantsWrite, http.StatusOK},
	{"console figures", http.MethodGet, "/console/api/figures", "", principal.ScopePlantsRead, http.StatusOK},
}

// assertScopes sends every operation with token and checks it is served
// when the token holds the operation's scope (has), refused with the 403
// otherwise.
func assertScopes(t *testing.T, s *testServer, token string, has map[string]bool) {
	t.Helper()
	for _, op := range operations {
		t.Run(op.name, func(t *testing.T) {
			// The plant the operation works on, made with the all-scopes token.
			if r := s.post(t, `{"id":1,"name":"Monstera"}`); r.Status != http.StatusOK {
				t.Fatalf("setup create = %d %s", r.Status, r.Body)
			}
			contentType := ""
			if op.body != "" {
				contentType = "application/json"
			}
			if op.path == "/plants:import" {
				contentType = "application/x-ndjson"
			}
			r := s.do(t, s.request(t, op.method, op.path, token, contentType, []byte(op.body)))
			if has[op.scope] {
				if r.Status != op.ok || r.Header.Get("WWW-Authenticate") != "" {
					t.Fatalf("%s %s with %s = %d %s, want %d", op.method, op.path, op.scope, r.Status, r.Body, op.ok)
				}
				return
			}
			if got := r.Header.Values("WWW-Authenticate"); len(got) != 1 || got[0] != scopeChallenge(op.scope) {
				t.Fatalf("WWW-Authenticate = %q, want %q", got, scopeChallenge(op.scope))
			}
			if op.method == http.MethodHead {
				if r.Status != http.StatusForbidden || len(r.Body) != 0 {
					t.Fatalf("HEAD without scope = %d %q, want 403 without a body", r.Status, r.Body)
				}
				return
			}
			assertErrorMessage(t, r, http.StatusForbidden, scopeMessage(op.scope))
			// The 403 keeps the connection: the token may do other things.
			if c := r.Header.Get("Connection"); c == "close" {
				t.Fatal("a 403 closed the connection")
			}
		})
	}
}

// TestScopesOfTokensFile: a line with scopes allows its operations only; a
// line without any allows everything, as before scopes existed; a reload
// changes a token's scopes with no restart.
func TestScopesOfTokensFile(t *testing.T) {
	t.Parallel()
	const reader, writer, both, unscoped = "tok-reader-0a9c", "tok-writer-71be", "tok-both-5d02", "tok-unscoped-e4f1"
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	write := func(content string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("# dashboards read, CI writes\n" +
		reader + " name=dashboard plants:read\n" +
		writer + " plants:write\n" +
		both + " plants:read plants:write\n" +
		unscoped + "\n")
	cfg := testConfig(t) // testToken stays, from --tokens, with every scope
	cfg.Auth.TokensFile = path
	s := startServer(t, cfg)

	read, wr := principal.ScopePlantsRead, principal.ScopePlantsWrite
	for _, tc := range []struct {
		name, token string
		has         map[string]bool
	}{
		{"plants:read", reader, map[string]bool{read: true}},
		{"plants:write", writer, map[string]bool{wr: true}},
		{"both", both, map[string]bool{read: true, wr: true}},
		{"no scopes listed: every scope", unscoped, map[string]bool{read: true, wr: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { assertScopes(t, s, tc.token, tc.has) })
	}
	// Nine refusals above: the reader's four writes, the writer's five reads.
	if got := s.metric(t, `plantstore_auth_failures_total{reason="insufficient_scope"}`); got != 9 {
		t.Fatalf(`plantstore_auth_failures_total{reason="insufficient_scope"} = %v, want 9`, got)
	}

	// The reload: the reader may now write too.
	write(reader + " name=dashboard plants:read plants:write\n")
	nextID := 100
	eventually(t, 10*time.Second, "the reader's new scope is in force", func() bool {
		nextID++
		r := s.do(t, s.request(t, http.MethodPost, "/plants", reader, "application/json", []byte(`{"id":`+strconv.Itoa(nextID)+`,"name":"a"}`)))
		return r.Status == http.StatusOK
	})
	if r := s.do(t, s.request(t, http.MethodGet, "/plants", writer, "", nil)); r.Status != http.StatusUnauthorized {
		t.Fatalf("the writer, removed from the file: %d", r.Status)
	}
}

// TestOpenAPIDeclaresScopes: each operation of the document names, in
// x-scopes, the scope the server requires of it (the table above, which
// TestScopesOfTokensFile holds against the server), and declares the 403.
func TestOpenAPIDeclaresScopes(t *testing.T) {
	doc, _ := loadOpenAPI(t)
	want := map[string]string{} // "GET /plants/{id}" -> scope
	for _, op := range append(slices.Clip(operations), webhookOperations...) {
		if op.method == http.MethodHead {
			continue // the document describes GET only
		}
		path := op.path
		if path == "/plants/1" {
			path = "/plants/{id}"
		}
		want[op.method+" "+path] = op.scope
	}
	// The webhook endpoints' operations, tested by TestWebhookEndpoints.
	for _, key := range []string{"GET /webhooks/endpoints", "POST /webhooks/endpoints", "GET /webhooks/endpoints/{id}",
		"PATCH /webhooks/endpoints/{id}", "DELETE /webhooks/endpoints/{id}", "POST /webhooks/endpoints/{id}/rotate"} {
		want[key] = principal.ScopeWebhooksManage
	}
	// The console's page and files are public: no credentials, no scope
	// (TestConsoleRoutes serves them without a token).
	public := map[string]bool{"GET /console": true, "GET /console/assets/{file}": true}
	seen := 0
	for path, item := range doc.Paths.Map() {
		for method, o := range item.Operations() {
			key := method + " " + path
			if o.Security != nil && len(*o.Security) == 0 {
				if !public[key] || o.Extensions["x-scopes"] != nil {
					t.Errorf("%s: declared without security, but it is not a public route, or it names scopes", key)
				}
				delete(public, key)
				continue
			}
			seen++
			scope, ok := want[key]
			if !ok {
				t.Errorf("%s: an operation the scope tests do not cover", key)
				continue
			}
			got, _ := o.Extensions["x-scopes"].([]any)
			if len(got) != 1 || got[0] != scope {
				t.Errorf("%s: x-scopes %v, want [%s]", key, o.Extensions["x-scopes"], scope)
			}
			if o.Responses.Status(http.StatusForbidden) == nil {
				t.Errorf("%s: no 403 response", key)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("the document has %d operations, the scope tests %d", seen, len(want))
	}
	if len(public) != 0 {
		t.Errorf("public routes the document does not declare public: %v", public)
	}
}
