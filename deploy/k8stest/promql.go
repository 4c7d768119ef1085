package k8stest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Selector is one vector selector of a PromQL expression, e.g.
// http_server_request_duration_seconds_count{code=~"5.."}.
type Selector struct {
	Metric   string
	Matchers []Matcher
}

// Matcher is one label matcher of a selector.
type Matcher struct {
	Label, Op, Value string // Op is one of = != =~ !~
}

// Selectors returns the vector selectors of a PromQL expression: enough of
// PromQL to tell which metrics and label values a rule or a dashboard panel
// reads. Prometheus's own parser would be the exact tool, but its module
// pulls in module versions the Go module proxy refuses; promtool checks
// the syntax of the rules, this only names what they read.
func Selectors(expr string) ([]Selector, error) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return nil, err
	}
	var out []Selector
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		next := token{}
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case t.kind == tokIdent && groupingKeywords[t.text] && next.text == "(":
			// by (le), on (job), group_left (x): label names, not metrics.
			for i < len(toks) && toks[i].text != ")" {
				i++
			}
		case t.kind == tokIdent && (next.text == "(" || promqlKeywords[t.text]):
			// A function or aggregation call, an operator word or a number.
		case t.kind == tokIdent:
			sel := Selector{Metric: t.text}
			if next.kind == tokBraces {
				if sel.Matchers, err = parseMatchers(next.text); err != nil {
					return nil, fmt.Errorf("%s%s: %w", t.text, next.text, err)
				}
				i++
			}
			out = append(out, sel)
		case t.kind == tokBraces:
			return nil, fmt.Errorf("selector %s without a metric name: name the metric", t.text)
		}
	}
	return out, nil
}

// groupingKeywords take a parenthesised list of label names.
var groupingKeywords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// promqlKeywords are identifiers that are not metric names: aggregation
// operators (which may come before their "by" clause rather than before
// "("), binary operator words, modifiers and number literals.
var promqlKeywords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
	"and": true, "or": true, "unless": true, "atan2": true, "bool": true, "offset": true,
	"Inf": true, "NaN": true, "inf": true, "nan": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

type tokKind int

const (
	tokOther  tokKind = iota
	tokIdent          // a metric, label, function or keyword name
	tokBraces         // a whole {...} label matcher list, braces included
)

type token struct {
	kind tokKind
	text string
}

// lexPromQL splits expr into identifiers, {...} matcher lists and single
// other characters; strings, numbers, durations in [...] and "@ ..."
// are dropped, as nothing in them names a metric.
func lexPromQL(expr string) ([]token, error) {
	var toks []token
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#': // comment to the end of the line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(expr, i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '{':
			end, err := closing(expr, i, '}')
			if err != nil {
				return nil, err
			}
			toks = append(toks, token{tokBraces, expr[i:end]})
			i = end
		case c == '[': // a range or subquery duration
			end, err := closing(expr, i, ']')
			if err != nil {
				return nil, err
			}
			i = end
		case isDigit(c) || (c == '.' && i+1 < len(expr) && isDigit(expr[i+1])):
			// A number or a duration: digits, dots, exponents, unit letters.
			for i < len(expr) && (isIdentChar(expr[i]) || expr[i] == '.' ||
				((expr[i] == '+' || expr[i] == '-') && (expr[i-1] == 'e' || expr[i-1] == 'E'))) {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(expr) && (isIdentChar(expr[i]) || expr[i] == ':') {
				i++
			}
			toks = append(toks, token{tokIdent, expr[start:i]})
		default:
			toks = append(toks, token{tokOther, string(c)})
			i++
		}
	}
	return toks, nil
}

// closing returns the index after the bracket that closes the one at
// expr[start], skipping strings.
func closing(expr string, start int, close byte) (int, error) {
	for i := start + 1; i < len(expr); {
		switch expr[i] {
		case close:
			return i + 1, nil
		case '"', '\'', '`':
			end, err := skipString(expr, i)
			if err != nil {
				return 0, err
			}
			i = end
		default:
			i++
		}
	}
	return 0, fmt.Errorf("unclosed %q at offset %d", expr[start], start)
}

// skipString returns the index after the string literal at expr[start].
func skipString(expr string, start int) (int, error) {
	quote := expr[start]
	for i := start + 1; i < len(expr); i++ {
		switch {
		case expr[i] == '\\' && quote != '`':
			i++
		case expr[i] == quote:
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated string at offset %d", start)
}

// parseMatchers parses a {...} matcher list.
func parseMatchers(braces string) ([]Matcher, error) {
	body := strings.TrimSpace(braces[1 : len(braces)-1])
	var out []Matcher
	for body != "" {
		end := 0
		for end < len(body) && (isIdentChar(body[end])) {
			end++
		}
		if end == 0 {
			return nil, fmt.Errorf("want a label name at %q", body)
		}
		m := Matcher{Label: body[:end]}
		body = strings.TrimLeftFunc(body[end:], unicode.IsSpace)
		for _, op := range []string{"=~", "!~", "!=", "="} {
			if strings.HasPrefix(body, op) {
				m.Op = op
				break
			}
		}
		if m.Op == "" {
			return nil, fmt.Errorf("want a matcher operator at %q", body)
		}
		body = strings.TrimLeftFunc(body[len(m.Op):], unicode.IsSpace)
		if body == "" {
			return nil, fmt.Errorf("label %s: want a value", m.Label)
		}
		end, err := skipString(body, 0)
		if err != nil {
			return nil, err
		}
		if m.Value, err = unquote(body[:end]); err != nil {
			return nil, fmt.Errorf("label %s: %w", m.Label, err)
		}
		out = append(out, m)
		body = strings.TrimLeftFunc(body[end:], unicode.IsSpace)
		body = strings.TrimLeftFunc(strings.TrimPrefix(body, ","), unicode.IsSpace)
	}
	return out, nil
}

func unquote(s string) (string, error) {
	if s[0] == '\'' { // PromQL allows single-quoted strings of any length
		s = `"` + strings.ReplaceAll(strings.ReplaceAll(s[1:len(s)-1], `\'`, `'`), `"`, `\"`) + `"`
	}
	return strconv.Unquote(s)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}
func isIdentChar(c byte) bool { return isIdentStart(c) && c != ':' || isDigit(c) }
