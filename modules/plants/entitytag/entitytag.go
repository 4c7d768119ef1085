// Package entitytag reads the values of If-Match and If-None-Match (RFC
// 9110 §13.1.1 and §13.1.2): "*" or a list of entity tags. The server's
// conditional requests and the command line's --if-match use this one
// parser, so that a value is accepted or refused alike wherever it is given.
//
// It imports nothing of the service: the client side uses it too.
package entitytag

import "strings"

// Expected says what a value must be, for the messages that refuse one.
const Expected = `"*" or a list of entity tags such as "abc"`

// List is a parsed If-Match or If-None-Match value.
type List struct {
	Any  bool     // "*"
	Tags []string // each with its quotes, and W/ when weak
}

// Parse reads value, the header's field lines joined with commas; ok is
// false when it is not "*" or a non-empty list of entity tags.
func Parse(value string) (list List, ok bool) {
	value = strings.TrimSpace(value)
	if value == "*" {
		return List{Any: true}, true
	}
	rest := value
	for {
		rest = strings.TrimLeft(rest, " \t,")
		if rest == "" {
			break
		}
		tag, after, ok := cut(rest)
		if !ok {
			return List{}, false
		}
		list.Tags = append(list.Tags, tag)
		rest = strings.TrimLeft(after, " \t")
		if rest != "" && rest[0] != ',' {
			return List{}, false
		}
	}
	return list, len(list.Tags) > 0
}

// cut cuts one entity tag, [W/]"etagc*", from the start of s.
func cut(s string) (tag, rest string, ok bool) {
	start := 0
	if strings.HasPrefix(s, "W/") {
		start = 2
	}
	if len(s) <= start || s[start] != '"' {
		return "", "", false
	}
	end := strings.IndexByte(s[start+1:], '"')
	if end < 0 {
		return "", "", false
	}
	for _, c := range []byte(s[start+1 : start+1+end]) {
		if c < 0x21 || c == 0x7f { // etagc excludes controls and spaces
			return "", "", false
		}
	}
	n := start + 1 + end + 1
	return s[:n], s[n:], true
}

// MatchStrong reports whether etag is in the list by strong comparison
// (If-Match's): a weak tag never matches.
func (l List) MatchStrong(etag string) bool {
	if l.Any {
		return true
	}
	for _, t := range l.Tags {
		if t == etag {
			return true
		}
	}
	return false
}

// MatchWeak reports whether etag is in the list ignoring W/ prefixes
// (If-None-Match's comparison).
func (l List) MatchWeak(etag string) bool {
	if l.Any {
		return true
	}
	for _, t := range l.Tags {
		if strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
