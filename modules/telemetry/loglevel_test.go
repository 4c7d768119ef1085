package telemetry

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	httpserver "github.com/plantstore/plantstore/modules/httpserver"
)

func TestParseLevel(t *testing.T) {
	for name, want := range map[string]zapcore.Level{
		"debug": zapcore.DebugLevel, "info": zapcore.InfoLevel, "warn": zapcore.WarnLevel, "error": zapcore.ErrorLevel,
	} {
		if got, err := parseLevel(name); err != nil || got != want {
			t.Errorf("parseLevel(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
	// zap's own parser takes these; at dpanic and above the access log and
	// every warning are silent.
	for _, name := range []string{"dpanic", "panic", "fatal", "DEBUG", "Info", "warning", "", " info"} {
		if _, err := parseLevel(name); !errors.Is(err, errUnknownLevel) {
			t.Errorf("parseLevel(%q): err %v, want errUnknownLevel", name, err)
		}
	}
	if _, _, err := newLoggerTo(Config{LogLevel: "panic", LogFormat: "json"}, zapcore.AddSync(io.Discard)); err == nil {
		t.Error(`newLoggerTo with level "panic": no error`)
	}
}

// The routes are served as the app serves them: on the admin handler,
// with its body cap.
func TestLogLevelRoutes(t *testing.T) {
	log, level, err := newLoggerTo(Config{LogLevel: "info", LogFormat: "json"}, zapcore.AddSync(io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = log.Sync() }()
	admin := httpserver.NewAdminHandler(httpserver.NewReadiness(nil, zap.NewNop()), logLevelRoutes(level))

	const (
		badLevel    = `{"error":400,"message":"level: want debug, info, warn or error"}`
		badBody     = `{"error":400,"message":"request body must be a JSON object {\"level\": \"<level>\"} and nothing else"}`
		notJSON     = `{"error":415,"message":"Content-Type must be application/json"}`
		tooLarge    = `{"error":413,"message":"request body is larger than the limit of 4096 bytes"}`
		contentType = "application/json"
	)
	for _, tc := range []struct {
		name, method, body string
		headers            http.Header
		chunked            bool
		status             int
		want               string
		level              zapcore.Level // after the request
	}{
		{"read", http.MethodGet, "", nil, false, http.StatusOK, `{"level":"info"}`, zapcore.InfoLevel},
		{"read by HEAD", http.MethodHead, "", nil, false, http.StatusOK, `{"level":"info"}`, zapcore.InfoLevel},
		{"set debug", http.MethodPut, `{"level":"debug"}`, jsonHeader(), false, http.StatusOK, `{"level":"debug"}`, zapcore.DebugLevel},
		{"set warn, charset given", http.MethodPut, ` {"level":"warn"} `, http.Header{"Content-Type": {"application/json; charset=utf-8"}}, false, http.StatusOK, `{"level":"warn"}`, zapcore.WarnLevel},
		{"set error, chunked", http.MethodPut, `{"level":"error"}`, jsonHeader(), true, http.StatusOK, `{"level":"error"}`, zapcore.ErrorLevel},
		{"set info", http.MethodPut, `{"level":"info"}`, jsonHeader(), false, http.StatusOK, `{"level":"info"}`, zapcore.InfoLevel},
		{"panic", http.MethodPut, `{"level":"panic"}`, jsonHeader(), false, http.StatusBadRequest, badLevel, zapcore.InfoLevel},
		{"fatal", http.MethodPut, `{"level":"fatal"}`, jsonHeader(), false, http.StatusBadRequest, badLevel, zapcore.InfoLevel},
		{"dpanic", http.MethodPut, `{"level":"dpanic"}`, jsonHeader(), false, http.StatusBadRequest, badLevel, zapcore.InfoLevel},
		{"upper case", http.MethodPut, `{"level":"DEBUG"}`, jsonHeader(), false, http.StatusBadRequest, badLevel, zapcore.InfoLevel},
		{"markup, not echoed", http.MethodPut, `{"level":"<script>alert(1)</script>"}`, jsonHeader(), false, http.StatusBadRequest, badLevel, zapcore.InfoLevel},
		{"not a string", http.MethodPut, `{"level":1}`, jsonHeader(), false, http.StatusBadRequest, badBody, zapcore.InfoLevel},
		{"null", http.MethodPut, `{"level":null}`, jsonHeader(), false, http.StatusBadRequest, badBody, zapcore.InfoLevel},
		{"no level", http.MethodPut, `{}`, jsonHeader(), false, http.StatusBadRequest, badBody, zapcore.InfoLevel},
		{"empty", http.MethodPut, ``, jsonHeader(), false, http.StatusBadRequest, badBody, zapcore.InfoLevel},
		{"unknown member", http.MethodPut, `{"level":"debug","verbose":true}`, jsonHeader(), false, http.StatusBadRequest, badBody, zapcore.InfoLevel},
		{"duplicate member", http.MethodPut, `{"level":"debug","level":"warn"}`, jsonHeader(), false, http.StatusBadRequest, badBody, zapcore.InfoLevel},
		{"trailing data", http.MethodPut, `{"level":"debug"}{}`, jsonHeader(), false, http.StatusBadRequest, badBody, zapcore.InfoLevel},
		{"invalid UTF-8", http.MethodPut, "{\"level\":\"debug\xff\"}", jsonHeader(), false, http.StatusBadRequest, badBody, zapcore.InfoLevel},
		{"an array", http.MethodPut, `["debug"]`, jsonHeader(), false, http.StatusBadRequest, badBody, zapcore.InfoLevel},
		{"a form", http.MethodPut, "level=debug", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, false, http.StatusUnsupportedMediaType, notJSON, zapcore.InfoLevel},
		{"no content type", http.MethodPut, `{"level":"debug"}`, nil, false, http.StatusUnsupportedMediaType, notJSON, zapcore.InfoLevel},
		{"two content types", http.MethodPut, `{"level":"debug"}`, http.Header{"Content-Type": {contentType, "text/plain"}}, false, http.StatusUnsupportedMediaType, notJSON, zapcore.InfoLevel},
		{"over the cap, declared", http.MethodPut, `{"level":"debug"}` + strings.Repeat(" ", 4<<10), jsonHeader(), false, http.StatusRequestEntityTooLarge, tooLarge, zapcore.InfoLevel},
		{"over the cap, chunked", http.MethodPut, `{"level":"debug"}` + strings.Repeat(" ", 4<<10), jsonHeader(), true, http.StatusRequestEntityTooLarge, tooLarge, zapcore.InfoLevel},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = struct{ io.Reader }{body} // no length known
			}
			req := httptest.NewRequest(tc.method, logLevelPath, body)
			for k, vs := range tc.headers {
				req.Header[k] = vs
			}
			rec := httptest.NewRecorder()
			admin.ServeHTTP(rec, req)
			if rec.Code != tc.status || rec.Body.String() != tc.want {
				t.Errorf("answer %d %s, want %d %s", rec.Code, rec.Body, tc.status, tc.want)
			}
			if ct := rec.Header().Get("Content-Type"); ct != contentType {
				t.Errorf("Content-Type = %q, want %s", ct, contentType)
			}
			if got := level.Level(); got != tc.level {
				t.Errorf("level afterwards %v, want %v", got, tc.level)
			}
			// The logger follows the level it was built with.
			if !log.Core().Enabled(tc.level) || (tc.level > zapcore.DebugLevel && log.Core().Enabled(tc.level-1)) {
				t.Errorf("logger not at %v", tc.level)
			}
		})
	}
}

func jsonHeader() http.Header { return http.Header{"Content-Type": {"application/json"}} }
