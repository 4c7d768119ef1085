package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/plants"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// The app wakes the webhook sender with the store's change log: with polls
// a minute apart, a create's event arrives well before a poll could bring
// it (the first create's event may come with the claim the sender makes at
// its start; the second's only with a wake).
func TestWebhooksWakeOnTheStoresChanges(t *testing.T) {
	t.Parallel()
	for _, store := range []string{plants.StoreBolt, plants.StorePostgres} {
		t.Run(store, func(t *testing.T) { testWebhooksWakeOnTheStoresChanges(t, store) })
	}
}

func testWebhooksWakeOnTheStoresChanges(t *testing.T, store string) {
	cfg := storeConfig(t, store)
	secret := webhookstest.NewSecret()
	r := webhookstest.NewReceiver(t, secret)
	cfg.Webhooks.File = filepath.Join(t.TempDir(), "webhooks.yaml")
	writeWebhooksFile(t, cfg.Webhooks.File, secret, map[string]*webhookstest.Receiver{"crm": r})
	cfg.Webhooks.AllowPrivate, cfg.Webhooks.AllowHTTP = true, true
	cfg.Webhooks.PollInterval = time.Minute
	s := startServer(t, cfg)
	for i := range 2 {
		if res := s.post(t, fmt.Sprintf(`{"id":%d,"name":"Monstera"}`, i+1)); res.Status != http.StatusOK {
			t.Fatalf("create: %d %s", res.Status, res.Body)
		}
		// A bound half a poll interval long: past it, a poll might have
		// brought the event.
		poll.Wait(t, 5*time.Millisecond, 30*time.Second, fmt.Sprintf("create %d's event, within half a poll interval", i+1), func() (bool, error) {
			n := len(r.Delivered())
			return n == i+1, fmt.Errorf("%d delivered", n)
		})
	}
}
