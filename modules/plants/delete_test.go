package plants

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/plantstore/plantstore/modules/plants/memstore"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

func TestDelete(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	for _, p := range []plant.Plant{{ID: 1, Name: "fern"}, {ID: -3, Name: "cactus", Tag: plant.StringPtr("dry")}} {
		if _, err := store.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	api := newTestAPI(t, store)

	assertAnswer(t, serve(api, http.MethodDelete, "/plants/-3"), http.StatusNoContent, "")
	if _, err := store.Get(ctx, -3); !errors.Is(err, plant.ErrNotFound) {
		t.Fatalf("after delete, Get(-3) = %v, want ErrNotFound", err)
	}
	// Deleting again finds nothing; the other plant was never touched.
	assertAnswer(t, serve(api, http.MethodDelete, "/plants/-3"), http.StatusNotFound, `{"error":404,"message":"plant -3 not found"}`)
	if _, err := store.Get(ctx, 1); err != nil {
		t.Fatalf("Get(1) = %v, want the fern still stored", err)
	}

	for target, body := range map[string]string{
		"/plants/abc":                  `{"error":400,"message":"path parameter \"id\" must be an integer id, not \"abc\""}`,
		"/plants/9223372036854775808":  `{"error":400,"message":"path parameter \"id\" 9223372036854775808 is outside the int64 range"}`,
		"/plants/-9223372036854775809": `{"error":400,"message":"path parameter \"id\" -9223372036854775809 is outside the int64 range"}`,
	} {
		assertAnswer(t, serve(api, http.MethodDelete, target), http.StatusBadRequest, body)
	}
	if got, _ := store.List(ctx, plant.ListQuery{Limit: 10}); len(got) != 1 || got[0].ID != 1 {
		t.Fatalf("after bad deletes the store holds %v, want only plant 1", got)
	}
}
