package plants

import (
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/plants/memstore"
)

// TestRoutesDeclareScopes: every operation declares the scope the chain
// checks, reads plants:read and changes plants:write, so that a scoped
// token (issue 16) is held to what it may do.
func TestRoutesDeclareScopes(t *testing.T) {
	h, err := NewHandlers(memstore.New(), nil, DefaultMaxBodyBytes, prometheus.NewRegistry(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		http.MethodGet + " /plants":         principal.ScopePlantsRead,
		http.MethodPost + " /plants":        principal.ScopePlantsWrite,
		http.MethodGet + " /plants/changes": principal.ScopePlantsRead,
		http.MethodGet + " /plants/{id}":    principal.ScopePlantsRead,
		http.MethodPut + " /plants/{id}":    principal.ScopePlantsWrite,
		http.MethodDelete + " /plants/{id}": principal.ScopePlantsWrite,
	}
	routes := append(h.Routes(), NewFeed(nil, nil, zap.NewNop()).Routes()...)
	if len(routes) != len(want) {
		t.Fatalf("%d routes, want %d", len(routes), len(want))
	}
	for _, rt := range routes {
		if got, w := rt.Requires, want[rt.Method+" "+rt.Path]; got != w {
			t.Errorf("%s %s requires %q, want %q", rt.Method, rt.Path, got, w)
		}
	}
}
