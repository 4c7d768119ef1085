package entitytag

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		value string
		ok    bool
		want  List
	}{
		{`*`, true, List{Any: true}},
		{` * `, true, List{Any: true}},
		{`"a"`, true, List{Tags: []string{`"a"`}}},
		{`"a", W/"b" ,"c,d"`, true, List{Tags: []string{`"a"`, `W/"b"`, `"c,d"`}}},
		{`"a",,"b",`, true, List{Tags: []string{`"a"`, `"b"`}}},
		{`""`, true, List{Tags: []string{`""`}}},
		{`a`, false, List{}},
		{`abcdefghijklmnopqrstuv`, false, List{}}, // a bare tag is not one
		{`"a" "b"`, false, List{}},
		{`"a b"`, false, List{}},
		{`"a`, false, List{}},
		{`W/a`, false, List{}},
		{`,`, false, List{}},
		{``, false, List{}},
		{`*, "a"`, false, List{}},
	} {
		got, ok := Parse(tc.value)
		if ok != tc.ok || got.Any != tc.want.Any || !slices.Equal(got.Tags, tc.want.Tags) {
			t.Errorf("Parse(%q) = %+v, %v; want %+v, %v", tc.value, got, ok, tc.want, tc.ok)
		}
	}
}

func TestMatch(t *testing.T) {
	l, _ := Parse(`"a", W/"b"`)
	for etag, want := range map[string][2]bool{`"a"`: {true, true}, `"b"`: {false, true}, `"c"`: {false, false}} {
		if got := [2]bool{l.MatchStrong(etag), l.MatchWeak(etag)}; got != want {
			t.Errorf("%s: strong, weak = %v, want %v", etag, got, want)
		}
	}
	if any, _ := Parse("*"); !any.MatchStrong(`"x"`) || !any.MatchWeak(`"x"`) {
		t.Error(`"*" does not match every tag`)
	}
}
