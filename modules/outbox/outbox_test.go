package outbox_test

import (
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/outbox"
)

// Ids made one after another sort one after another (the time comes
// first), and ids made in one millisecond still differ (80 random bits).
func TestIDsSortInTheOrderTheyWereMade(t *testing.T) {
	first := outbox.NewID()
	time.Sleep(2 * time.Millisecond)
	second := outbox.NewID()
	if first >= second {
		t.Fatalf("%s made before %s sorts after it", first, second)
	}
	seen := map[string]bool{}
	for range 1000 {
		id := outbox.NewID()
		if len(id) != 30 || !strings.HasPrefix(id, "msg_") || strings.Trim(id[4:], "234567abcdefghijklmnopqrstuvwxyz") != "" || seen[id] {
			t.Fatalf("id %q: want a distinct msg_ and 26 of [2-7a-z]", id)
		}
		seen[id] = true
	}
}
