package plants

import (
	"net/http"
	"strconv"
	"strings"
)

// Conditional requests (RFC 9110 §13). A plant's ETag is strong (see ETag),
// If-Match compares strongly and If-None-Match weakly, as §13.1.1 and
// §13.1.2 require; "*" matches any stored plant.

// entityTags is a parsed If-Match or If-None-Match header.
type entityTags struct {
	any  bool     // "*"
	tags []string // each with its quotes, and W/ when weak
}

// parseEntityTags reads the named header's field lines as one list. ok is
// false when the header is absent; a value that is not "*" or a list of
// entity tags is an error whose message names the header, answered 400.
func parseEntityTags(r *http.Request, name string) (et entityTags, present bool, err error) {
	lines := r.Header.Values(name)
	if len(lines) == 0 {
		return et, false, nil
	}
	value := strings.TrimSpace(strings.Join(lines, ","))
	if value == "*" {
		return entityTags{any: true}, true, nil
	}
	rest := value
	for {
		rest = strings.TrimLeft(rest, " \t,")
		if rest == "" {
			break
		}
		tag, after, ok := cutEntityTag(rest)
		if !ok {
			return et, true, badRequest(name + " must be \"*\" or a list of entity tags such as \"abc\", not " + quoteClipped(value))
		}
		et.tags = append(et.tags, tag)
		rest = strings.TrimLeft(after, " \t")
		if rest != "" && rest[0] != ',' {
			return et, true, badRequest(name + " must be \"*\" or a list of entity tags such as \"abc\", not " + quoteClipped(value))
		}
	}
	if len(et.tags) == 0 {
		return et, true, badRequest(name + " must be \"*\" or a list of entity tags such as \"abc\", not " + quoteClipped(value))
	}
	return et, true, nil
}

// cutEntityTag cuts one entity tag, [W/]"etagc*", from the start of s.
func cutEntityTag(s string) (tag, rest string, ok bool) {
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
	cut := start + 1 + end + 1
	return s[:cut], s[cut:], true
}

// matchStrong reports whether etag is in the list by strong comparison: a
// weak tag never matches.
func (et entityTags) matchStrong(etag string) bool {
	if et.any {
		return true
	}
	for _, t := range et.tags {
		if t == etag {
			return true
		}
	}
	return false
}

// matchWeak reports whether etag is in the list ignoring W/ prefixes.
func (et entityTags) matchWeak(etag string) bool {
	if et.any {
		return true
	}
	for _, t := range et.tags {
		if strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}

// quoteClipped quotes a header value for an error message, clipped.
func quoteClipped(s string) string { return strconv.Quote(clip(s)) }
