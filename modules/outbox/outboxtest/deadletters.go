package outboxtest

import (
	"testing"

	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/changes/changestest"
	"github.com/plantstore/plantstore/modules/outbox"
)

// A dead letter says what it was: the kind and version of its change, for
// every kind, as the delivery that died carried them; a deletion's body
// ({"id":N}) alone could not say it.
func testADeadLetterSaysWhatItWas(t *testing.T, h harness) {
	h.w.next = planned{endpoints: []string{"a"}, describe: true}
	committed := changestest.RunScript(t, h.plants, nil)
	ds := claimSoon(t, h.box, "a", len(committed), hour)
	want := make(map[string]outbox.Delivery, len(ds))
	for _, d := range ds {
		if err := h.box.Bury(ctx, d, "answered 500"); err != nil {
			t.Fatal(err)
		}
		want[d.ID] = d
	}
	dead, err := h.box.DeadLetters(ctx, "a", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != len(ds) {
		t.Fatalf("%d dead letters, want %d", len(dead), len(ds))
	}
	kinds := make(map[changes.Kind]int)
	for _, dl := range dead {
		d := want[dl.ID]
		if dl.Kind != d.Kind || dl.Version != d.Version || dl.Version <= 0 || string(dl.Body) != string(d.Body) {
			t.Errorf("dead letter %s: %s version %d body %s; its delivery was %s version %d body %s",
				dl.ID, dl.Kind, dl.Version, dl.Body, d.Kind, d.Version, d.Body)
		}
		kinds[dl.Kind]++
	}
	for _, k := range changes.Kinds {
		if kinds[k] == 0 {
			t.Errorf("no dead letter of kind %s: the script commits every kind", k)
		}
	}
}
