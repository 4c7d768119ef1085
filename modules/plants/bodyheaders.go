package plants

import (
	"mime"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"

	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// jsonContentType is the media type of a create's and an update's body.
const jsonContentType = "application/json"

// checkBodyHeaders answers 415 and returns false unless the body can be
// read one way only: one Content-Type, of mediaType (parameters allowed),
// in UTF-8 if it names a charset, and no content coding but identity. A
// proxy in front may read an ambiguous request otherwise than this service
// does (the first of two Content-Types, or the last?), so such a request
// is refused rather than guessed at. The create, the update and the import
// check their bodies with it.
func checkBodyHeaders(w http.ResponseWriter, r *http.Request, mediaType string) bool {
	if n := len(r.Header["Content-Type"]); n > 1 {
		httperr.Write(w, http.StatusUnsupportedMediaType,
			"the request has "+strconv.Itoa(n)+" Content-Type headers; send one, "+mediaType)
		return false
	}
	return checkContentType(w, r, mediaType) && checkIdentityEncoding(w, r)
}

// checkContentType answers 415 and returns false unless the request
// declares mediaType, with no charset but UTF-8: the body is read as
// UTF-8 whatever it declares, and text in another charset would be
// refused as invalid or, worse, stored as other characters than meant.
func checkContentType(w http.ResponseWriter, r *http.Request, mediaType string) bool {
	ct := r.Header.Get("Content-Type")
	if ct == mediaType {
		return true
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err == nil && mt == mediaType {
		cs, ok := params["charset"]
		if !ok || strings.EqualFold(cs, "utf-8") || strings.EqualFold(cs, "utf8") {
			return true
		}
		httperr.Write(w, http.StatusUnsupportedMediaType,
			"the body must be UTF-8, not charset "+strconv.Quote(clip(cs))+"; send it in UTF-8 as "+mediaType)
		return false
	}
	msg := "Content-Type must be " + mediaType
	if ct == "" {
		msg += "; the request has none"
	} else {
		msg += ", not " + strconv.Quote(clip(ct))
	}
	httperr.Write(w, http.StatusUnsupportedMediaType, msg)
	return false
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
