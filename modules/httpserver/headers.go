package httpserver

import "net/http"

// SecurityHeaders sets, before anything else can answer, the headers every
// API answer carries, errors included:
//   - Cache-Control: no-store, since plants are per-store data behind a
//     token and a shared cache must neither keep nor replay them;
//   - X-Content-Type-Options: nosniff, so that a browser never reads a JSON
//     answer (which echoes client input in error messages) as HTML or script.
//
// The values are shared by every answer rather than allocated per answer by
// Header.Set; net/http only reads them.
func SecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h["Cache-Control"] = noStore
		h["X-Content-Type-Options"] = noSniff
		next.ServeHTTP(w, r)
	})
}

var (
	noStore = []string{"no-store"}
	noSniff = []string{"nosniff"}
)
