package httperr

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	Write(rec, http.StatusConflict, `plant 7 is "taken"`)
	if rec.Code != http.StatusConflict {
		t.Fatalf("status = %d, want 409", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var got struct {
		Error   int    `json:"error"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("body %q is not JSON: %v", rec.Body, err)
	}
	if got.Error != 409 || got.Message != `plant 7 is "taken"` {
		t.Fatalf("body = %+v", got)
	}
}

func TestBodyInvalidUTF8StaysJSON(t *testing.T) {
	b := Body(400, "bad \xff byte")
	if !json.Valid(b) {
		t.Fatalf("Body produced invalid JSON: %q", b)
	}
}
