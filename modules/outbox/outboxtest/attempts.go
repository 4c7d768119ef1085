package outboxtest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/outbox"
)

// at is an attempt's time as every store keeps it exactly: whole
// microseconds (PostgreSQL's precision), in UTC.
func at(ago time.Duration) time.Time {
	return time.Now().Add(-ago).Truncate(time.Microsecond).UTC()
}

// attempted returns d carrying the outcome of an attempt at when.
func attempted(d outbox.Delivery, when time.Time, status int, class, answer string, latency time.Duration) outbox.Delivery {
	d.Outcome = &outbox.Attempt{At: when, Status: status, Error: class, Latency: latency, Answer: answer}
	return d
}

// want is the attempt the record should hold for d's outcome.
func want(d outbox.Delivery) outbox.Attempt {
	a := *d.Outcome
	a.Message, a.Endpoint, a.Number = d.ID, d.Endpoint, d.Attempt
	return a
}

// sameAttempts compares attempts but for their Seq (the store's), which
// must increase in the order of record.
func sameAttempts(t *testing.T, what string, got, want []outbox.Attempt, newestFirst bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d attempts %+v, want %d %+v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if i > 0 && (got[i].Seq > got[i-1].Seq) == newestFirst {
			t.Errorf("%s: attempt %d has seq %d after %d: out of order", what, i, got[i].Seq, got[i-1].Seq)
		}
		g := got[i]
		g.Seq = 0
		g.At = g.At.UTC()
		if !reflect.DeepEqual(g, want[i]) {
			t.Errorf("%s: attempt %d\n got %+v\nwant %+v", what, i, g, want[i])
		}
	}
}

// An attempt that failed and the one that delivered are on record, with
// the state they left; an endpoint's listing is newest first, filtered by
// outcome and paged by Seq.
func testAttemptsAreOnRecordWithTheirState(t *testing.T, h harness) {
	h.write(t, Event(1), "a")
	first := claimSoon(t, h.box, "a", 1, hour)[0]
	failed := attempted(first, at(3*time.Second), 500, "", "boom: é \uFFFD", 12*time.Millisecond)
	if err := h.box.Retry(ctx, failed, 0, "answered 500"); err != nil {
		t.Fatal(err)
	}
	m, err := h.box.Message(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.State != outbox.StatePending || m.ID != first.ID || m.Endpoint != "a" || string(m.Body) != string(first.Body) ||
		m.Version != first.Version || m.Kind != first.Kind || !m.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("message after a failed attempt = %+v, want pending, as claimed %+v", m, first)
	}
	sameAttempts(t, "the message's attempts after a failure", m.Attempts, []outbox.Attempt{want(failed)}, false)

	second := claimSoon(t, h.box, "a", 1, hour)[0]
	if second.Attempt != 2 {
		t.Fatalf("second claim is attempt %d, want 2", second.Attempt)
	}
	timedOut := attempted(second, at(2*time.Second), 0, outbox.ErrorTimeout, "", 10*time.Second)
	if err := h.box.Retry(ctx, timedOut, 0, "no answer"); err != nil {
		t.Fatal(err)
	}
	third := claimSoon(t, h.box, "a", 1, hour)[0]
	ok := attempted(third, at(time.Second), 200, "", `{"ok":true}`, 3*time.Millisecond)
	if err := h.box.Delivered(ctx, []outbox.Delivery{ok}); err != nil {
		t.Fatal(err)
	}
	h.write(t, Event(2), "b") // another endpoint's attempts are not a's
	other := attempted(claimSoon(t, h.box, "b", 1, hour)[0], at(0), 204, "", "", time.Millisecond)
	if err := h.box.Delivered(ctx, []outbox.Delivery{other}); err != nil {
		t.Fatal(err)
	}

	m, err = h.box.Message(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m.State != outbox.StateDelivered {
		t.Fatalf("message state %q after its delivery, want delivered", m.State)
	}
	all := []outbox.Attempt{want(failed), want(timedOut), want(ok)}
	sameAttempts(t, "the message's attempts", m.Attempts, all, false)

	list := func(q outbox.AttemptQuery) []outbox.Attempt {
		t.Helper()
		got, err := h.box.Attempts(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	newest := []outbox.Attempt{want(ok), want(timedOut), want(failed)}
	sameAttempts(t, "a's attempts", list(outbox.AttemptQuery{Endpoint: "a", Limit: 10}), newest, true)
	yes, no := true, false
	sameAttempts(t, "a's succeeded attempts", list(outbox.AttemptQuery{Endpoint: "a", Succeeded: &yes, Limit: 10}), newest[:1], true)
	sameAttempts(t, "a's failed attempts", list(outbox.AttemptQuery{Endpoint: "a", Succeeded: &no, Limit: 10}), newest[1:], true)
	page := list(outbox.AttemptQuery{Endpoint: "a", Limit: 2})
	sameAttempts(t, "a's first page", page, newest[:2], true)
	sameAttempts(t, "a's second page", list(outbox.AttemptQuery{Endpoint: "a", Before: page[1].Seq, Limit: 2}), newest[2:], true)
	sameAttempts(t, "b's attempts", list(outbox.AttemptQuery{Endpoint: "b", Limit: 10}), []outbox.Attempt{want(other)}, true)
	sameAttempts(t, "nobody's attempts", list(outbox.AttemptQuery{Endpoint: "nobody", Limit: 10}), nil, true)
	if _, err := h.box.Message(ctx, "msg_nothing"); !errors.Is(err, outbox.ErrNoMessage) {
		t.Fatalf("Message(unknown) = %v, want ErrNoMessage", err)
	}
}

// A message is sent again whatever its state, with its id, body and
// version, its attempts counted from 1; one whose endpoint is not
// configured stays as it is.
func testResendInAnyState(t *testing.T, h harness) {
	h.write(t, Event(1), "a")
	d := claimSoon(t, h.box, "a", 1, hour)[0]
	dead := attempted(d, at(time.Second), 500, "", "no", time.Millisecond)
	if err := h.box.Bury(ctx, dead, "answered 500"); err != nil {
		t.Fatal(err)
	}
	state := func(want string) {
		t.Helper()
		m, err := h.box.Message(ctx, d.ID)
		if err != nil || m.State != want {
			t.Fatalf("Message(%s) = state %q, %v; want %q", d.ID, m.State, err, want)
		}
	}
	state(outbox.StateDead)
	var notConfigured *outbox.NotConfiguredError
	if err := h.box.Resend(ctx, d.ID, []string{"b"}); !errors.As(err, &notConfigured) || notConfigured.Endpoint != "a" {
		t.Fatalf("Resend to an unconfigured endpoint = %v, want a *NotConfiguredError for a", err)
	}
	state(outbox.StateDead)
	if err := h.box.Resend(ctx, "msg_nothing", []string{"a"}); !errors.Is(err, outbox.ErrNoMessage) {
		t.Fatalf("Resend(unknown) = %v, want ErrNoMessage", err)
	}
	for _, from := range []string{outbox.StateDead, outbox.StateDelivered, outbox.StatePending} {
		if err := h.box.Resend(ctx, d.ID, []string{"a"}); err != nil {
			t.Fatalf("Resend from %s: %v", from, err)
		}
		state(outbox.StatePending)
		if from == outbox.StatePending {
			break
		}
		again := claimSoon(t, h.box, "a", 1, hour)[0]
		if again.ID != d.ID || string(again.Body) != string(d.Body) || again.Version != d.Version || again.Attempt != 1 {
			t.Fatalf("resent from %s: %+v, want %s's id, body and version at attempt 1", from, again, d.ID)
		}
		if err := h.box.Delivered(ctx, []outbox.Delivery{attempted(again, at(0), 200, "", "", time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		state(outbox.StateDelivered)
	}
	m, err := h.box.Message(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Attempts) != 3 || m.Attempts[0].Status != 500 || m.Attempts[1].Status != 200 || m.Attempts[1].Number != 1 || m.Attempts[2].Number != 1 {
		t.Fatalf("attempts after two resends = %+v, want 500, 200 and 200, each attempt 1", m.Attempts)
	}
}

// Prune removes the attempts made before its time, and keeps the rest.
func testPruneRemovesOldAttempts(t *testing.T, h harness) {
	h.write(t, Event(1), "a")
	d := claimSoon(t, h.box, "a", 1, hour)[0]
	old := attempted(d, at(2*hour), 503, "", "", time.Millisecond)
	if err := h.box.Retry(ctx, old, 0, "answered 503"); err != nil {
		t.Fatal(err)
	}
	d = claimSoon(t, h.box, "a", 1, hour)[0]
	recent := attempted(d, at(0), 503, "", "", time.Millisecond)
	if err := h.box.Retry(ctx, recent, hour, "answered 503"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.box.Prune(ctx, time.Now().Add(-hour)); err != nil {
		t.Fatal(err)
	}
	m, err := h.box.Message(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameAttempts(t, "attempts after the prune", m.Attempts, []outbox.Attempt{want(recent)}, false)
	got, err := h.box.Attempts(ctx, outbox.AttemptQuery{Endpoint: "a", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	sameAttempts(t, "a's attempts after the prune", got, []outbox.Attempt{want(recent)}, true)
}
