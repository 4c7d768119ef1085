package telemetry

import (
	"errors"
	"io"
	"mime"
	"net/http"

	"github.com/go-json-experiment/json"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// levels are the log levels an operator may choose, at start (--log-level)
// and at run time (PUT /loglevel). zap's dpanic, panic and fatal are left
// out: at those levels the access log and every warning fall silent.
var levels = []zapcore.Level{zapcore.DebugLevel, zapcore.InfoLevel, zapcore.WarnLevel, zapcore.ErrorLevel}

// errUnknownLevel is parseLevel's error. It does not repeat the name it was
// given, so that /loglevel can answer with it without echoing its input.
var errUnknownLevel = errors.New("want debug, info, warn or error")

// parseLevel returns the level named name: debug, info, warn or error,
// lower case, as the level's String spells it.
func parseLevel(name string) (zapcore.Level, error) {
	for _, l := range levels {
		if l.String() == name {
			return l, nil
		}
	}
	return 0, errUnknownLevel
}

// logLevelPath is the admin path that reads (GET) and changes (PUT) the log
// level at run time:
//
//	curl -X PUT -H 'Content-Type: application/json' -d '{"level":"debug"}' admin:9090/loglevel
const logLevelPath = "/loglevel"

// logLevelRoutes serve the level on the admin listener, as {"level":"info"}.
// Their bodies are capped by the admin listener (the http module's AdminMaxBodyBytes).
func logLevelRoutes(level zap.AtomicLevel) []httpapi.Route {
	return []httpapi.Route{
		{Method: http.MethodGet, Path: logLevelPath, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			writeLevel(w, level.Level())
		})},
		{Method: http.MethodPut, Path: logLevelPath, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if lvl, ok := readLevel(w, r); ok {
				level.SetLevel(lvl)
				writeLevel(w, lvl)
			}
		})},
	}
}

// Error messages are fixed strings: /loglevel never repeats what a client sent.
const (
	msgContentType = "Content-Type must be application/json"
	msgUnreadable  = "request body could not be read"
	msgBadBody     = `request body must be a JSON object {"level": "<level>"} and nothing else`
)

// readLevel reads PUT /loglevel's {"level":"debug"}, or answers the error
// and returns false.
func readLevel(w http.ResponseWriter, r *http.Request) (zapcore.Level, bool) {
	if !isJSON(r.Header) {
		httperr.Write(w, http.StatusUnsupportedMediaType, msgContentType)
		return 0, false
	}
	// The admin listener has capped the body; the read fails at the cap.
	body, err := io.ReadAll(r.Body)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		httperr.WriteBodyTooLarge(w, tooLarge.Limit)
		return 0, false
	case err != nil:
		httperr.Write(w, http.StatusBadRequest, msgUnreadable)
		return 0, false
	}
	// The strict decoder: duplicate or unknown names, invalid UTF-8 and
	// trailing data are all refused.
	var req struct {
		Level *string `json:"level"`
	}
	if json.Unmarshal(body, &req, json.RejectUnknownMembers(true)) != nil || req.Level == nil {
		httperr.Write(w, http.StatusBadRequest, msgBadBody)
		return 0, false
	}
	lvl, err := parseLevel(*req.Level)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, "level: "+err.Error())
		return 0, false
	}
	return lvl, true
}

// isJSON reports whether h declares exactly one Content-Type, and that it
// is application/json (parameters such as charset allowed): with two, a
// proxy in front might have read the body as the other.
func isJSON(h http.Header) bool {
	ct := h.Values("Content-Type")
	if len(ct) != 1 {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct[0])
	return err == nil && mt == "application/json"
}

func writeLevel(w http.ResponseWriter, lvl zapcore.Level) {
	httperr.SetJSONContentType(w.Header())
	_, _ = w.Write([]byte(`{"level":"` + lvl.String() + `"}`)) // names from levels only: nothing to escape
}
