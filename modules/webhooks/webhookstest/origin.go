package webhookstest

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The public document the specification was cut from declares the webhook
// (/plant/webhook: a POST whose body is a NewPlant); a copy is kept in
// api/origin.
var (
	originOnce   sync.Once
	originSchema *openapi3.Schema
	originErr    error
)

// CheckOriginSchema fails the test unless body is valid against the origin
// document's /plant/webhook request body, as kin-openapi reads it.
func CheckOriginSchema(t testing.TB, body []byte) {
	t.Helper()
	originOnce.Do(func() {
		_, here, _, _ := runtime.Caller(0)
		path := filepath.Join(filepath.Dir(here), "..", "..", "..", "api", "origin", "plant-store-origin.openapi.json")
		doc, err := openapi3.NewLoader().LoadFromFile(path)
		if err != nil {
			originErr = err
			return
		}
		originSchema = doc.Webhooks["/plant/webhook"].Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	})
	if originErr != nil {
		t.Fatalf("origin document: %v", originErr)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("webhook body %s is not JSON: %v", body, err)
	}
	if err := originSchema.VisitJSON(v); err != nil {
		t.Errorf("webhook body %s does not match the origin document's /plant/webhook: %v", body, err)
	}
}
