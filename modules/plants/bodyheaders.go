package plants

import (
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/plantstore/plantstore/modules/http/httperr"
)

// checkBodyHeaders answers 415 and returns false unless the body can be
// read one way only: one Content-Type, application/json, and no content
// coding but identity. A proxy in front may read an ambiguous request
// otherwise than this service does (the first of two Content-Types, or the
// last?), so such a request is refused rather than guessed at.
func checkBodyHeaders(w http.ResponseWriter, r *http.Request) bool {
	if n := len(r.Header["Content-Type"]); n > 1 {
		httperr.Write(w, http.StatusUnsupportedMediaType,
			"the request has "+strconv.Itoa(n)+" Content-Type headers; send one, application/json")
		return false
	}
	return checkJSONContentType(w, r) && checkIdentityEncoding(w, r)
}

// checkIdentityEncoding answers 415 with Accept-Encoding: identity, as RFC
// 9110 §15.5.16 asks, unless every content coding the request declares is
// identity. The body is never decoded: read as plain JSON, a gzip body
// would be a confusing 400, and one that happened to parse would store
// what the client did not mean.
func checkIdentityEncoding(w http.ResponseWriter, r *http.Request) bool {
	for _, v := range r.Header["Content-Encoding"] {
		for coding := range strings.SplitSeq(v, ",") {
			// Empty list elements are ignored, as RFC 9110 §5.6.1 requires.
			if coding = textproto.TrimString(coding); coding != "" && !strings.EqualFold(coding, "identity") {
				w.Header().Set("Accept-Encoding", "identity")
				httperr.Write(w, http.StatusUnsupportedMediaType,
					"Content-Encoding "+strconv.Quote(clip(v))+" is not supported; send the body without a content coding")
				return false
			}
		}
	}
	return true
}
