// Package httperr writes the API's one error shape,
// {"error": <HTTP status>, "message": "..."}, for every non-2xx answer.
// It is a leaf package so that any module's handlers can use it.
package httperr

import (
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// Write answers status with an Error body carrying message.
func Write(w http.ResponseWriter, status int, message string) {
	SetJSONContentType(w.Header())
	w.WriteHeader(status)
	_, _ = w.Write(Body(status, message))
}

// WriteBodyTooLarge answers 413 for a body over limit bytes, in the words
// of the API's own 413.
func WriteBodyTooLarge(w http.ResponseWriter, limit int64) {
	Write(w, http.StatusRequestEntityTooLarge,
		"request body is larger than the limit of "+strconv.FormatInt(limit, 10)+" bytes")
}

// jsonContentType is shared by every answer: Header.Set would allocate a
// fresh one-element slice per answer. net/http only reads header values, so
// sharing is safe as long as no handler writes into the slice in place.
var jsonContentType = []string{"application/json"}

// SetJSONContentType sets Content-Type: application/json on h.
func SetJSONContentType(h http.Header) { h["Content-Type"] = jsonContentType }

// Body returns the JSON Error body for status and message.
func Body(status int, message string) []byte {
	b := make([]byte, 0, 32+len(message))
	b = append(b, `{"error":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, `,"message":`...)
	// AppendQuote only fails on invalid UTF-8, which it still escapes as
	// U+FFFD; the body stays valid JSON either way.
	b, _ = jsontext.AppendQuote(b, message)
	return append(b, '}')
}
