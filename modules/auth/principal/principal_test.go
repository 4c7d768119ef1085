package principal

import (
	"context"
	"testing"
)

func TestHas(t *testing.T) {
	reader := &Principal{ID: "token:1", Name: "dashboard", Scopes: []string{ScopePlantsRead}}
	admin := &Principal{ID: "token:2", Name: "admin", AllScopes: true}
	for _, tc := range []struct {
		p     *Principal
		scope string
		want  bool
	}{
		{reader, ScopePlantsRead, true},
		{reader, ScopePlantsWrite, false},
		{reader, "", false},
		{admin, ScopePlantsRead, true},
		{admin, ScopePlantsWrite, true},
		{admin, "a scope named later", true},
		{&Principal{ID: "token:3"}, ScopePlantsRead, false},
		{nil, ScopePlantsRead, false},
	} {
		if got := tc.p.Has(tc.scope); got != tc.want {
			t.Errorf("%+v.Has(%q) = %v, want %v", tc.p, tc.scope, got, tc.want)
		}
	}
}

func TestFromContext(t *testing.T) {
	p := &Principal{ID: "token:1", Name: "one", AllScopes: true}
	if got := FromContext(context.Background()); got != nil {
		t.Fatalf("FromContext(bare) = %+v, want nil", got)
	}
	if got := FromContext(WithPrincipal(context.Background(), p)); got != p {
		t.Fatalf("FromContext(WithPrincipal(p)) = %+v, want p", got)
	}
}
