package plants

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gorilla/mux"
)

// pathID parses the {id} of /plants/{id}. The route has no pattern on
// purpose: an id that is not an int64 reaches the handler and gets a 400
// that says why, instead of a 404 that suggests the plant is missing.
func pathID(r *http.Request) (int64, error) {
	return parseID(`path parameter "id"`, mux.Vars(r)["id"])
}

// parseID parses an int64 id written in canonical decimal (see
// isCanonicalInt); param names it in the error message.
func parseID(param, s string) (int64, error) {
	if err := checkText(param, s); err != nil {
		return 0, err
	}
	if !isCanonicalInt(s) {
		return 0, notCanonical(param+" must be an integer id", s)
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil { // canonical digits, so only ErrRange is possible
		return 0, badRequest(param + " " + clip(s) + " is outside the int64 range")
	}
	return id, nil
}

// checkText refuses a parameter value that PostgreSQL's text cannot hold:
// invalid UTF-8 (SQLSTATE 22021) or U+0000. Refused before any store is
// called, the answer is the same 400 whichever store runs, never a 500 on
// one and a 200 on another. The words match the body decoder's.
func checkText(param, s string) error {
	if !utf8.ValidString(s) {
		return badRequest(param + " is not valid UTF-8")
	}
	if strings.IndexByte(s, 0) >= 0 {
		return badRequest(param + " must not contain the character U+0000")
	}
	return nil
}

// isCanonicalInt reports whether s is an integer as strconv.FormatInt
// writes it: an optional '-', then digits without leading zeros, "0" alone
// for zero ("-0" is not canonical). ParseInt alone would also take "+5",
// "005" and "-0": one plant would then have many URLs, and a cache, a log
// search or a proxy rule keyed on "/plants/5" would miss "/plants/005". The
// body decoder refuses "+5" and "05" as JSON does.
func isCanonicalInt(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || digits[0] == '0' && len(s) > 1 {
		return false
	}
	for i := range len(digits) {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// notCanonical is the error for a value that is not canonical decimal. One
// that ParseInt would read ("+5", "007", "-0") is told what to drop, since
// the client probably meant the number.
func notCanonical(want, s string) error {
	if _, err := strconv.ParseInt(s, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return badRequest(want + " in canonical decimal (no '+', no leading zeros, no \"-0\"), not " + strconv.Quote(clip(s)))
	}
	return badRequest(want + ", not " + strconv.Quote(clip(s)))
}

// maxEcho is how much of a client's value an error message repeats: enough
// to recognise it, not enough to bounce a long URL back.
const maxEcho = 64

// clip shortens s to at most maxEcho bytes, cutting on a character boundary.
func clip(s string) string {
	if len(s) <= maxEcho {
		return s
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// parseQuery reads a raw query string whose parameters named are each
// given at most once, as valid text; other parameters are ignored. A
// malformed string, a repeated parameter or a malformed value is a
// *badRequestError naming it.
func parseQuery(raw string, names ...string) (url.Values, error) {
	values, err := url.ParseQuery(raw)
	if err != nil {
		return nil, badRequest("query string is malformed: " + err.Error())
	}
	for _, name := range names {
		v := values[name]
		if n := len(v); n > 1 {
			return nil, badRequest(`query parameter "` + name + `" is given ` + strconv.Itoa(n) + " times; give it at most once")
		}
		if len(v) == 1 {
			if err := checkText(`query parameter "`+name+`"`, v[0]); err != nil {
				return nil, err
			}
		}
	}
	return values, nil
}
