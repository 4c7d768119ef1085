package plants

import (
	"errors"
	"net/http"
	"strconv"
	"unicode/utf8"

	"github.com/gorilla/mux"
)

// pathID parses the {id} of /plants/{id}. The route has no pattern on
// purpose: an id that is not an int64 reaches the handler and gets a 400
// that says why, instead of a 404 that suggests the plant is missing.
func pathID(r *http.Request) (int64, error) {
	return parseID(`path parameter "id"`, mux.Vars(r)["id"])
}

// parseID parses a decimal int64 id; param names it in the error message.
func parseID(param, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err == nil:
		return id, nil
	case errors.Is(err, strconv.ErrRange):
		return 0, badRequest(param + " " + clip(s) + " is outside the int64 range")
	default:
		return 0, badRequest(param + " must be an integer id, not " + strconv.Quote(clip(s)))
	}
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
