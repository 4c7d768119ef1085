package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// The change feed and the envelope endpoint's events come from one commit
// each (the change and its outbox rows), through two unrelated paths: a
// change in one and not the other is a gap in the one that lacks it, and a
// change that differs between them is a fault of one. The feed is read to
// its end first (a page came back empty), so the events are awaited until
// each of its changes has one, or until the limit.

// changeKey names a change: a plant's version is given once.
type changeKey struct{ ID, Version int64 }

// CrossReport holds the feed's changes against the delivered envelopes.
type CrossReport struct {
	Checked bool
	Both    int      // changes in both, equal
	Differ  []string // changes in both whose type, plant or time differ, or in one only
	Waited  time.Duration
}

// crossCheck waits, at most limit, until every change of pages has its
// delivered envelope among the receiver's requests, then compares the two
// sets.
func crossCheck(ctx context.Context, requests func() []webhookstest.Request, pages []FeedPage, limit time.Duration) CrossReport {
	feed := map[changeKey]change{}
	for _, p := range pages {
		for _, fc := range p.Changes {
			if c, bad := parseChange(fc.Type, fc.Timestamp, fc.ID, fc.Version, fc.Plant); bad == "" {
				feed[changeKey{c.ID, c.Version}] = c // malformed ones are the feed check's finding
			}
		}
	}
	start := time.Now()
	var events map[changeKey]change
	// Complete or not, the comparison tells what came.
	_ = poll.Until(ctx, 100*time.Millisecond, limit, func() (bool, error) {
		events = deliveredChanges(requests())
		for k := range feed {
			if _, ok := events[k]; !ok {
				return false, nil
			}
		}
		return true, nil
	})
	rep := compareChanges(feed, events)
	rep.Waited = time.Since(start)
	return rep
}

// deliveredChanges are the changes of the distinct envelopes answered 2xx
// (malformed ones are the event check's finding).
func deliveredChanges(reqs []webhookstest.Request) map[changeKey]change {
	out := map[changeKey]change{}
	for _, req := range reqs {
		if req.Status < 200 || req.Status > 299 {
			continue
		}
		var env envelopeBody
		if json.Unmarshal(req.Body, &env) != nil {
			continue
		}
		if c, bad := parseChange(env.Type, env.Timestamp, env.Data.ID, env.Data.Version, env.Data.Plant); bad == "" {
			out[changeKey{c.ID, c.Version}] = c
		}
	}
	return out
}

// compareChanges holds the feed's changes and the events' against each
// other, naming each that is in one only or differs.
func compareChanges(feed, events map[changeKey]change) CrossReport {
	rep := CrossReport{Checked: true}
	for k, f := range feed {
		e, ok := events[k]
		switch {
		case !ok:
			rep.Differ = append(rep.Differ, fmt.Sprintf("id %d: version %d (%s) in the feed, no envelope of it delivered", k.ID, k.Version, f.Type))
		case e.Type != f.Type || e.Plant != f.Plant || !e.At.Equal(f.At):
			rep.Differ = append(rep.Differ, fmt.Sprintf("id %d: version %d is %s of %s at %s in the feed, %s of %s at %s in its envelope",
				k.ID, k.Version, f.Type, describe(f.Plant), f.At.Format(eventTime), e.Type, describe(e.Plant), e.At.Format(eventTime)))
		default:
			rep.Both++
		}
	}
	for k, e := range events {
		if _, ok := feed[k]; !ok {
			rep.Differ = append(rep.Differ, fmt.Sprintf("id %d: version %d (%s) delivered, not in the feed", k.ID, k.Version, e.Type))
		}
	}
	slices.Sort(rep.Differ)
	return rep
}

// violate records each change that differs.
func (rep CrossReport) violate(c *Cluster) {
	for i, l := range rep.Differ {
		if i == 5 {
			c.Violate("the feed against the envelopes: and %d more", len(rep.Differ)-i)
			return
		}
		c.Violate("the feed against the envelopes: %s", l)
	}
}

// String is the report's summary line.
func (rep CrossReport) String() string {
	if !rep.Checked {
		return "the feed against the envelopes: not checked"
	}
	return fmt.Sprintf("the feed against the envelopes: %d changes in both, %d in one only or different (events awaited %s)",
		rep.Both, len(rep.Differ), rep.Waited.Round(100*time.Millisecond))
}
