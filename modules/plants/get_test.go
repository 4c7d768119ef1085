package plants

import (
	"context"
	"net/http"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

func TestGet(t *testing.T) {
	store := memstore.New()
	for _, p := range []plant.Plant{
		{ID: 1, Name: "Monstera", Tag: plant.StringPtr("tropical")},
		{ID: -9223372036854775808, Name: "min"},
		{ID: 9223372036854775807, Name: "", Tag: plant.StringPtr("")},
		{ID: 7, Name: "a \"quoted\" <name>\n"},
	} {
		if _, err := store.Create(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	api := newTestAPI(t, store)
	cases := []struct {
		target string
		status int
		body   string
	}{
		{"/plants/1", 200, `{"id":1,"name":"Monstera","tag":"tropical"}`},
		{"/plants/-9223372036854775808", 200, `{"id":-9223372036854775808,"name":"min"}`},
		{"/plants/9223372036854775807", 200, `{"id":9223372036854775807,"name":"","tag":""}`},
		{"/plants/7", 200, `{"id":7,"name":"a \"quoted\" <name>\n"}`},
		{"/plants/%31", 200, `{"id":1,"name":"Monstera","tag":"tropical"}`}, // the decoded path is what counts
		{"/plants/2", 404, `{"error":404,"message":"plant 2 not found"}`},
		{"/plants/0", 404, `{"error":404,"message":"plant 0 not found"}`},
		{"/plants/abc", 400, `{"error":400,"message":"path parameter \"id\" must be an integer id, not \"abc\""}`},
		{"/plants/9223372036854775808", 400, `{"error":400,"message":"path parameter \"id\" 9223372036854775808 is outside the int64 range"}`},
		{"/plants/-9223372036854775809", 400, `{"error":400,"message":"path parameter \"id\" -9223372036854775809 is outside the int64 range"}`},
		{"/plants/1.0", 400, `{"error":400,"message":"path parameter \"id\" must be an integer id, not \"1.0\""}`},
		{"/plants/%20", 400, `{"error":400,"message":"path parameter \"id\" must be an integer id, not \" \""}`},
		{"/plants/" + longDigits, 400, `{"error":400,"message":"path parameter \"id\" ` + longDigits[:64] + `… is outside the int64 range"}`},
		{"/plants/", 404, `{"error":404,"message":"no such path: /plants/"}`},
		{"/plants/1/", 404, `{"error":404,"message":"no such path: /plants/1/"}`},
	}
	for _, c := range cases {
		assertAnswer(t, serve(api, http.MethodGet, c.target), c.status, c.body)
	}
}

// longDigits is an id far outside int64 whose echo in messages is clipped.
const longDigits = "1234567890123456789012345678901234567890123456789012345678901234567890"
