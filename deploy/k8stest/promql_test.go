package k8stest

import (
	"reflect"
	"testing"
)

func TestSelectors(t *testing.T) {
	tests := []struct {
		expr string
		want []Selector
	}{
		{`up`, []Selector{{Metric: "up"}}},
		{
			`sum by (namespace, job) (rate(http_requests_total{code=~"5..", route="/plants"}[5m]))
			 / on (job) group_left (version) sum without (le) (x:y:rate5m offset 1h) > bool 14.4 * 1e-3`,
			[]Selector{
				{Metric: "http_requests_total", Matchers: []Matcher{{"code", "=~", "5.."}, {"route", "=", "/plants"}}},
				{Metric: "x:y:rate5m"},
			},
		},
		{
			`histogram_quantile(0.99, sum by (le) (rate(d_bucket{method='POST', job=~"$job", p!="a,b}\"c"}[$__rate_interval])))`,
			[]Selector{{Metric: "d_bucket", Matchers: []Matcher{{"method", "=", "POST"}, {"job", "=~", "$job"}, {"p", "!=", `a,b}"c`}}}},
		},
		{`count by (version) (info) and on () vector(1) unless absent(a{b!~"c"})`, []Selector{
			{Metric: "info"},
			{Metric: "a", Matchers: []Matcher{{"b", "!~", "c"}}},
		}},
		{`max_over_time(m[1h:5m]) > Inf or -NaN # a comment naming nothing`, []Selector{{Metric: "m"}}},
	}
	for _, tt := range tests {
		got, err := Selectors(tt.expr)
		if err != nil {
			t.Errorf("Selectors(%q): %v", tt.expr, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Selectors(%q)\n got %+v\nwant %+v", tt.expr, got, tt.want)
		}
	}
}

func TestSelectorsErrors(t *testing.T) {
	for _, expr := range []string{
		`{__name__="up"}`,   // no metric name to check
		`rate(m{a="b"[5m])`, // unclosed braces
		`m{a="b}`,           // unterminated string
		`m{a}`,              // no operator
		`m{="b"}`,           // no label name
		`sum(rate(m[5m)`,    // unclosed range
	} {
		if got, err := Selectors(expr); err == nil {
			t.Errorf("Selectors(%q) = %+v, want an error", expr, got)
		}
	}
}
