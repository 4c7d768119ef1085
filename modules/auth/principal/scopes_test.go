package principal

import (
	"slices"
	"testing"
)

func TestScopeTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   ", nil},
		{"plants:read plants:write", []string{"plants:read", "plants:write"}},
		{"  plants:read   plants:write ", []string{"plants:read", "plants:write"}},
		{"plants:read\u00a0plants:write", []string{"plants:read\u00a0plants:write"}},
		{"plants:read\tplants:write", []string{"plants:read\tplants:write"}},
		{"plants:read\nplants:write", []string{"plants:read\nplants:write"}},
	} {
		if got := ScopeTokens(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("ScopeTokens(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestConfigFields(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" \t ", nil},
		{"tok\tplants:read  plants:write", []string{"tok", "plants:read", "plants:write"}},
		{"tok plants:read\u00a0plants:write", []string{"tok", "plants:read\u00a0plants:write"}},
		{"tok\u2003plants:read", []string{"tok\u2003plants:read"}},
	} {
		if got := ConfigFields(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("ConfigFields(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
