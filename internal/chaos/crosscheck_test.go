package chaos

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// TestCrossCheck: a feed and envelopes holding the same changes agree
// (a duplicate delivery and a failed attempt count once, or not at all); a
// change in one only, or one whose content differs, is named by id and
// version.
func TestCrossCheck(t *testing.T) {
	ms := time.Millisecond
	_, p, q, r := eventHistory()
	c1 := feedChange(typeCreated, p, 10, 1, ms)
	c2 := feedChange(typeUpdated, q, 11, 2, 11*ms)
	c3 := feedChange(typeDeleted, Plant{ID: 1}, 13, 3, 21*ms)
	c5 := feedChange(typeCreated, r, 10, 5, ms)
	pages := []FeedPage{page("", c1, c5), page(c5.Cursor, c2, c3)}
	failed := delivered("msg_2", envelopeOf(typeUpdated, q, 2, 11*ms))
	failed.Status = 500
	all := []webhookstest.Request{
		delivered("msg_1", envelopeOf(typeCreated, p, 1, ms)),
		failed,
		delivered("msg_2", envelopeOf(typeUpdated, q, 2, 11*ms)),
		delivered("msg_2", envelopeOf(typeUpdated, q, 2, 11*ms)), // delivered again
		delivered("msg_3", envelopeOf(typeDeleted, Plant{ID: 1}, 3, 21*ms)),
		delivered("msg_5", envelopeOf(typeCreated, r, 5, ms)),
	}
	check := func(reqs []webhookstest.Request, pages []FeedPage) CrossReport {
		return crossCheck(context.Background(), func() []webhookstest.Request { return reqs }, pages, 0)
	}
	if rep := check(all, pages); rep.Both != 4 || len(rep.Differ) != 0 {
		t.Fatalf("equal sets: %d in both, differ %q; want 4, none", rep.Both, rep.Differ)
	}
	t.Run("a change the feed lacks", func(t *testing.T) {
		rep := check(all, []FeedPage{page("", c1, c5), page(c5.Cursor, c3)})
		want := []string{"id 1: version 2 (plant.updated) delivered, not in the feed"}
		if !slices.Equal(rep.Differ, want) || rep.Both != 3 {
			t.Fatalf("differ %q (%d in both), want %q", rep.Differ, rep.Both, want)
		}
	})
	t.Run("a change without its envelope", func(t *testing.T) {
		rep := check(slices.Delete(slices.Clone(all), 4, 5), pages)
		want := []string{"id 1: version 3 (plant.deleted) in the feed, no envelope of it delivered"}
		if !slices.Equal(rep.Differ, want) {
			t.Fatalf("differ %q, want %q", rep.Differ, want)
		}
	})
	t.Run("a change that differs", func(t *testing.T) {
		other := slices.Clone(all)
		other[0] = delivered("msg_1", envelopeOf(typeCreated, q, 1, ms))
		rep := check(other, pages)
		if len(rep.Differ) != 1 || rep.Differ[0] != "id 1: version 1 is plant.created of "+describe(p)+" at "+stamp(ms)+
			" in the feed, plant.created of "+describe(q)+" at "+stamp(ms)+" in its envelope" {
			t.Fatalf("differ %q", rep.Differ)
		}
	})
	t.Run("it waits for the envelopes still to come", func(t *testing.T) {
		calls := 0
		requests := func() []webhookstest.Request {
			calls++
			if calls < 3 {
				return all[:2]
			}
			return all
		}
		synctest.Test(t, func(t *testing.T) {
			rep := crossCheck(context.Background(), requests, pages, time.Minute)
			if calls != 3 || rep.Both != 4 || len(rep.Differ) != 0 || rep.Waited != 200*time.Millisecond {
				t.Fatalf("%d reads of the requests, %d in both, differ %q, waited %s; want 3, 4, none, 200ms", calls, rep.Both, rep.Differ, rep.Waited)
			}
		})
	})
}
