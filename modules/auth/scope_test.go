package auth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// callers authenticates a token as the principal of that name.
type callers map[string]*principal.Principal

func (c callers) Authenticate(_ context.Context, token string) (*principal.Principal, error) {
	if p := c[token]; p != nil {
		return p, nil
	}
	return nil, errors.New("unknown token")
}

// TestRequireScope: the scope link holds the route's requirement, as the
// router records it, against the principal auth attached: 403 with the
// insufficient_scope challenge and the Error body, counted as a refusal,
// the connection kept; no principal at all is refused too (fail closed); a
// route that requires nothing lets everyone through.
func TestRequireScope(t *testing.T) {
	reader := &principal.Principal{ID: "token:r", Name: "reader", Scopes: []string{principal.ScopePlantsRead}}
	writer := &principal.Principal{ID: "token:w", Name: "writer", Scopes: []string{principal.ScopePlantsWrite}}
	every := &principal.Principal{ID: "token:a", Name: "every", AllScopes: true}
	m, err := newAuthMiddleware(callers{"r": reader, "w": writer, "a": every}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	authenticated := m.Wrap(m.RequireScope(handler))
	anonymous := m.RequireScope(handler) // a chain without auth

	for _, tc := range []struct {
		name     string
		h        http.Handler
		token    string
		requires string
		status   int
	}{
		{"writer", authenticated, "w", principal.ScopePlantsWrite, http.StatusNoContent},
		{"a token listed without scopes", authenticated, "a", principal.ScopePlantsWrite, http.StatusNoContent},
		{"reader", authenticated, "r", principal.ScopePlantsWrite, http.StatusForbidden},
		{"no principal", anonymous, "", principal.ScopePlantsWrite, http.StatusForbidden},
		{"reader on an open route", authenticated, "r", "", http.StatusNoContent},
		{"no principal on an open route", anonymous, "", "", http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(m.failures.WithLabelValues(reasonInsufficientScope))
			req := httptest.NewRequest(http.MethodPost, "/plants", untouchedBody{t})
			req = req.WithContext(&httpapi.Record{Context: req.Context(), Template: "/plants", Requires: tc.requires})
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, req)
			if rec.Code != tc.status {
				t.Fatalf("status %d %s, want %d", rec.Code, rec.Body, tc.status)
			}
			refused := testutil.ToFloat64(m.failures.WithLabelValues(reasonInsufficientScope)) - before
			if tc.status != http.StatusForbidden {
				if c := rec.Header().Get("WWW-Authenticate"); c != "" || refused != 0 {
					t.Fatalf("WWW-Authenticate %q and %v refusals counted on a %d", c, refused, rec.Code)
				}
				return
			}
			if refused != 1 {
				t.Fatalf("failures{reason=insufficient_scope} grew by %v, want 1", refused)
			}
			if c := rec.Header().Values("WWW-Authenticate"); len(c) != 1 || c[0] != `Bearer error="insufficient_scope", scope="plants:write"` {
				t.Fatalf("403 WWW-Authenticate = %q", c)
			}
			if c := rec.Header().Get("Connection"); c != "" {
				t.Fatalf("403 Connection = %q, want none: the token is valid, the connection stays", c)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Fatalf("403 Content-Type = %q", ct)
			}
			var body struct {
				Error   int    `json:"error"`
				Message string `json:"message"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error != http.StatusForbidden ||
				body.Message != "this token lacks the scope plants:write that the operation requires" {
				t.Fatalf("403 body %s", rec.Body)
			}
		})
	}
}

// TestRequireScopeOutsideTheRouter: without the router's record, no route
// declared a requirement, so there is nothing to hold.
func TestRequireScopeOutsideTheRouter(t *testing.T) {
	m, err := newAuthMiddleware(callers{}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.RequireScope(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })).
		ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/plants", nil))
	if rec.Code != http.StatusNoContent {
		t.Fatalf("status %d, want 204", rec.Code)
	}
}

// untouchedBody fails the test when read: the scope link never reads a
// body, refused or not.
type untouchedBody struct{ t *testing.T }

func (u untouchedBody) Read([]byte) (int, error) {
	u.t.Error("the body was read")
	return 0, http.ErrBodyNotAllowed
}
