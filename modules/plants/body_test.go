package plants

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheckContentType(t *testing.T) {
	for _, tc := range []struct {
		contentType string // "" sends none
		ok          bool
		msg         string
	}{
		{contentType: "application/json", ok: true},
		{contentType: "application/json; charset=utf-8", ok: true},
		{contentType: "application/json;charset=UTF-8", ok: true},
		{contentType: "Application/JSON", ok: true},
		{contentType: "application/json ; charset=utf-8", ok: true},
		{contentType: "", msg: "Content-Type must be application/json; the request has none"},
		{contentType: "text/plain", msg: `Content-Type must be application/json, not "text/plain"`},
		{contentType: "text/plain; charset=utf-8", msg: `Content-Type must be application/json, not "text/plain; charset=utf-8"`},
		{contentType: "application/x-www-form-urlencoded", msg: `Content-Type must be application/json, not "application/x-www-form-urlencoded"`},
		{contentType: "application/json-patch+json", msg: `Content-Type must be application/json, not "application/json-patch+json"`},
		{contentType: "application/jsonx", msg: `Content-Type must be application/json, not "application/jsonx"`},
		{contentType: "application/json; charset", msg: `Content-Type must be application/json, not "application/json; charset"`},
		{contentType: "application", msg: `Content-Type must be application/json, not "application"`},
		{contentType: "application/json; charset=utf8", ok: true},
		{contentType: "application/json; charset=iso-8859-1", msg: `the body must be UTF-8, not charset "iso-8859-1"; send it in UTF-8 as application/json`},
		{contentType: "application/json; charset=utf-16", msg: `the body must be UTF-8, not charset "utf-16"; send it in UTF-8 as application/json`},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/plants", nil)
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			rec := httptest.NewRecorder()
			if got := checkContentType(rec, req, jsonContentType); got != tc.ok {
				t.Fatalf("checkContentType(%q) = %v, want %v", tc.contentType, got, tc.ok)
			}
			if tc.ok {
				if rec.Body.Len() != 0 {
					t.Fatalf("accepted, but wrote %d %s", rec.Code, rec.Body)
				}
				return
			}
			assertErrorRecorded(t, rec, http.StatusUnsupportedMediaType, tc.msg)
		})
	}
}

func TestReadBody(t *testing.T) {
	const limit = 16
	tooLarge := "request body is larger than the limit of 16 bytes"
	for _, tc := range []struct {
		name    string
		body    io.Reader
		length  int64 // Content-Length; -1 for chunked
		ok      bool
		status  int
		message string
	}{
		{name: "empty", body: strings.NewReader(""), length: 0, ok: true},
		{name: "under the limit", body: strings.NewReader("0123456789"), length: 10, ok: true},
		{name: "at the limit", body: strings.NewReader(strings.Repeat("x", limit)), length: limit, ok: true},
		{name: "chunked at the limit", body: strings.NewReader(strings.Repeat("x", limit)), length: -1, ok: true},
		{name: "declared over the limit", body: strings.NewReader(strings.Repeat("x", limit+1)), length: limit + 1, status: http.StatusRequestEntityTooLarge, message: tooLarge},
		// The declared length is checked before a byte is read: a huge
		// declared body is refused without being waited for.
		{name: "declared over the limit, nothing sent", body: failingReader{errors.New("must not be read")}, length: 1 << 40, status: http.StatusRequestEntityTooLarge, message: tooLarge},
		{name: "chunked over the limit", body: strings.NewReader(strings.Repeat("x", limit+1)), length: -1, status: http.StatusRequestEntityTooLarge, message: tooLarge},
		{name: "cut short", body: io.MultiReader(strings.NewReader("{\"id\""), failingReader{io.ErrUnexpectedEOF}), length: 10, status: http.StatusBadRequest, message: "request body ended before its declared length"},
		{name: "read error", body: failingReader{errors.New("connection reset")}, length: 10, status: http.StatusBadRequest, message: "request body could not be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/plants", tc.body)
			req.ContentLength = tc.length
			rec := httptest.NewRecorder()
			var buf bytes.Buffer
			if _, got := readBody(rec, req, &buf, limit); got != tc.ok {
				t.Fatalf("readBody = %v, want %v (answer %d %s)", got, tc.ok, rec.Code, rec.Body)
			}
			if tc.ok {
				if rec.Body.Len() != 0 {
					t.Fatalf("accepted, but wrote %d %s", rec.Code, rec.Body)
				}
				return
			}
			assertErrorRecorded(t, rec, tc.status, tc.message)
		})
	}
}

// A body of declared length is read into a buffer of about that size:
// left to grow by doubling, a 1 MiB body took a 2 MiB buffer, so the
// concurrency cap times the body limit understated the memory needed.
func TestReadBodySizesBufferToDeclaredLength(t *testing.T) {
	const size = 1 << 20
	req := httptest.NewRequest(http.MethodPost, "/plants", strings.NewReader(strings.Repeat("x", size)))
	var buf bytes.Buffer
	if _, ok := readBody(httptest.NewRecorder(), req, &buf, size); !ok {
		t.Fatal("readBody refused a body at the limit")
	}
	if buf.Len() != size || buf.Cap() > size+64<<10 {
		t.Fatalf("read %d bytes into a buffer of %d; want %d into at most %d", buf.Len(), buf.Cap(), size, size+64<<10)
	}
}

func TestBufferPoolDropsHugeBuffers(t *testing.T) {
	b := getBuffer()
	b.Grow(1 << 20)
	putBuffer(b) // must not be kept: a rare huge body would pin 1 MiB per pooled buffer
	for range 100 {
		if got := getBuffer(); got.Cap() >= 1<<20 {
			t.Fatalf("the pool handed out the huge buffer (cap %d)", got.Cap())
		}
	}
	small := getBuffer()
	small.WriteString("left over")
	putBuffer(small)
	if got := getBuffer(); got.Len() != 0 {
		t.Fatalf("getBuffer returned a buffer holding %q", got)
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

// assertErrorRecorded checks an Error answer: status, content type, and the
// exact {"error": status, "message": message} body.
func assertErrorRecorded(t *testing.T, rec *httptest.ResponseRecorder, status int, message string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("body %q is not JSON: %v", rec.Body, err)
	}
	if len(got) != 2 || got["error"] != float64(status) || got["message"] != message {
		t.Fatalf("body = %s, want {\"error\":%d,\"message\":%q}", rec.Body, status, message)
	}
}
