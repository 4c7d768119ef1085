package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// TestWebhookAttemptsOfAPIEndpoint: the record of attempts names an
// endpoint made through the API by its ep_ id as it names the file's by
// name; an id that is neither is 404, and a message whose API endpoint
// was deleted is kept and refused redelivery with 409.
func TestWebhookAttemptsOfAPIEndpoint(t *testing.T) {
	t.Parallel()
	fileSecret := webhookstest.NewSecret()
	s := startServer(t, webhooksAPIConfig(t, plants.StoreBolt, webhookstest.NewReceiver(t, fileSecret), fileSecret))
	call := func(method, path, body string) response {
		t.Helper()
		contentType := ""
		if body != "" {
			contentType = "application/json"
		}
		return s.do(t, s.request(t, method, path, testToken, contentType, []byte(body)))
	}

	rcv := webhookstest.NewReceiver(t, webhookstest.NewSecret())
	created := call(http.MethodPost, "/webhooks/endpoints", `{"url":"`+rcv.URL+`","format":"envelope","events":["plant.created"]}`)
	if created.Status != http.StatusCreated {
		t.Fatalf("create endpoint = %d %s", created.Status, created.Body)
	}
	var ep endpointResource
	created.JSON(t, &ep)
	if resp := s.post(t, `{"id":1,"name":"Rex","tag":"dog"}`); resp.Status != http.StatusOK {
		t.Fatalf("create plant = %d %s", resp.Status, resp.Body)
	}
	delivered := awaitDelivery(t, rcv, 1)

	var attempts []shownAttempt
	eventually(t, 20*time.Second, "the API endpoint's attempt on record", func() bool {
		resp := call(http.MethodGet, "/webhooks/endpoints/"+ep.ID+"/attempts", "")
		if resp.Status != http.StatusOK {
			t.Fatalf("GET attempts of %s = %d %s", ep.ID, resp.Status, resp.Body)
		}
		resp.JSON(t, &attempts)
		return len(attempts) == 1
	})
	checkAttempts(t, "the API endpoint's attempts", attempts, []wantAttempt{{number: 1, req: delivered, endpoint: ep.ID}})

	const unknown = "ep_aaaaaaaaaaaaaaaaaaaaaaaaaa"
	if resp := call(http.MethodGet, "/webhooks/endpoints/"+unknown+"/attempts", ""); resp.Status != http.StatusNotFound ||
		string(resp.Body) != `{"error":404,"message":"no webhook endpoint \"`+unknown+`\""}` {
		t.Fatalf("GET attempts of an unknown id = %d %s", resp.Status, resp.Body)
	}

	if resp := call(http.MethodDelete, "/webhooks/endpoints/"+ep.ID, ""); resp.Status != http.StatusNoContent {
		t.Fatalf("delete endpoint = %d %s", resp.Status, resp.Body)
	}
	if resp := call(http.MethodGet, "/webhooks/endpoints/"+ep.ID+"/attempts", ""); resp.Status != http.StatusNotFound ||
		string(resp.Body) != `{"error":404,"message":"no webhook endpoint \"`+ep.ID+`\""}` {
		t.Fatalf("GET attempts of the deleted endpoint = %d %s", resp.Status, resp.Body)
	}
	want := `{"error":409,"message":"the endpoint \"` + ep.ID + `\" of this message is neither in the webhooks file nor made through the API; ` +
		`the message is kept: redeliver it once the endpoint is back"}`
	if resp := call(http.MethodPost, "/webhooks/messages/"+delivered.ID+"/redeliver", ""); resp.Status != http.StatusConflict || string(resp.Body) != want {
		t.Fatalf("redeliver to the deleted endpoint = %d %s", resp.Status, resp.Body)
	}
	resp := call(http.MethodGet, "/webhooks/messages/"+delivered.ID, "")
	var m shownMessage
	resp.JSON(t, &m)
	if resp.Status != http.StatusOK || m.Endpoint != ep.ID || m.State != "delivered" || len(m.Attempts) != 1 {
		t.Fatalf("the message after the refused redelivery = %d %s", resp.Status, resp.Body)
	}
}
