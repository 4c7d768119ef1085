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

func TestAnswerTextIsBoundedValidText(t *testing.T) {
	long := strings.Repeat("a", outbox.MaxAnswerBytes-1) + "é" // é's second byte past the bound
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{`{"ok":true}`, `{"ok":true}`},
		{"bad \xff byte and \x00 nul", "bad \uFFFD byte and \uFFFD nul"},
		{long, strings.Repeat("a", outbox.MaxAnswerBytes-1)},
		{strings.Repeat("b", 5000), strings.Repeat("b", outbox.MaxAnswerBytes)},
	} {
		if got := outbox.AnswerText([]byte(tc.in)); got != tc.want {
			t.Errorf("AnswerText(%.40q) = %.40q (%d bytes), want %.40q (%d bytes)", tc.in, got, len(got), tc.want, len(tc.want))
		}
	}
}
