package webhookstest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/plantstore/plantstore/api"
)

// The project's own document (api/openapi.yaml, as served) describes every
// webhook under its event type.
var (
	eventsOnce sync.Once
	eventsDoc  *openapi3.T
	eventsErr  error
)

// CheckEventSchema fails the test unless body is valid against the request
// body of the project document's webhook named event (plant.created,
// plant.updated, plant.deleted), as kin-openapi reads it.
func CheckEventSchema(t testing.TB, event string, body []byte) {
	t.Helper()
	eventsOnce.Do(func() {
		eventsDoc, eventsErr = openapi3.NewLoader().LoadFromData(api.OpenAPI)
		if eventsErr == nil {
			eventsErr = eventsDoc.Validate(context.Background())
		}
	})
	if eventsErr != nil {
		t.Fatalf("api/openapi.yaml: %v", eventsErr)
	}
	hook := eventsDoc.Webhooks[event]
	if hook == nil || hook.Post == nil {
		t.Fatalf("api/openapi.yaml has no webhook %s", event)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("webhook body %s is not JSON: %v", body, err)
	}
	if err := hook.Post.RequestBody.Value.Content.Get("application/json").Schema.Value.VisitJSON(v); err != nil {
		t.Errorf("webhook body %s does not match api/openapi.yaml's %s: %v", body, event, err)
	}
}
