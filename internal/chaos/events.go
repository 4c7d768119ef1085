package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// Every change's event is the run's other webhook property: every replica
// also sends every change, as an envelope (format: envelope, all three
// types), to a second receiver. At the end the envelopes, applied per plant
// by version, must give the final reads; none may announce a change no
// write could have made; every acknowledged write must have its event; and
// no two distinct events of a plant may share a version.

// EventReport is what the envelope receiver got, held against the history.
type EventReport struct {
	Checked    bool
	Requests   int // every request the receiver got
	Delivered  int // distinct webhook-ids answered 2xx
	Duplicates int // 2xx requests for a webhook-id already delivered
	Unverified int // requests whose signature did not verify
	Applied    int // events that were their plant's newest so far
	Stale      int // events older than one of their plant's already applied, discarded

	Mirror     mirrorDiff // the applied events against the final reads
	Malformed  []string   // bodies that are not an envelope of the contract
	Foreign    []string   // events no write that may have taken effect could have made
	Missing    []string   // acknowledged writes without their event
	Clashes    []string   // two distinct events of a plant with one version
	Drain      time.Duration
	drainLimit time.Duration
}

// eventCheck follows the envelope receiver's requests, in arrival order,
// against the writes of a history.
type eventCheck struct {
	creates, updates map[Plant]bool  // plants a create (an update) that may have taken effect sent
	deletes          map[int64]bool  // ids a delete that may have taken effect was sent to
	acked            map[Plant]bool  // plants an acknowledged create or update sent
	ackedDeletes     map[int64]bool  // ids of deletes answered 204
	seen             map[string]bool // webhook-ids delivered
	versions         map[int64]map[int64]string
	stored           map[Plant]bool // plants of delivered created and updated events
	deleted          map[int64]bool // ids of delivered deleted events
	mirror           mirror
	consumed         int
	rep              EventReport
}

// newEventCheck takes the writes of ops. A create or update may have taken
// effect unless its answer says it changed nothing (409, 404, 412); a
// delete unless it was a 404.
func newEventCheck(ops []Op) *eventCheck {
	e := &eventCheck{creates: map[Plant]bool{}, updates: map[Plant]bool{}, deletes: map[int64]bool{},
		acked: map[Plant]bool{}, ackedDeletes: map[int64]bool{}, seen: map[string]bool{},
		versions: map[int64]map[int64]string{}, stored: map[Plant]bool{}, deleted: map[int64]bool{},
		mirror: mirror{}, rep: EventReport{Checked: true}}
	for _, op := range ops {
		p := Plant{ID: op.ID, Name: op.Name, Tag: op.Tag}
		switch {
		case op.Kind == Create && op.Answer != Conflict:
			e.creates[p] = true
		case op.Kind == Update && (op.Answer == OK || op.Answer == Unknown || op.Answer == Unexpected):
			e.updates[p] = true
		case op.Kind == Delete && op.Answer != NotFound:
			e.deletes[op.ID] = true
		}
		if op.Answer == OK {
			switch op.Kind {
			case Create, Update:
				e.acked[p] = true
			case Delete:
				e.ackedDeletes[op.ID] = true
			}
		}
	}
	return e
}

// envelopeBody is an envelope as the contract writes it.
type envelopeBody struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      struct {
		ID      int64      `json:"id"`
		Version int64      `json:"version"`
		Plant   *plantJSON `json:"plant"`
	} `json:"data"`
}

// plantJSON is a plant as the API writes it.
type plantJSON struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Tag  string `json:"tag"`
}

// parseChange reads an envelope's or a feed change's fields into a change,
// or says what is wrong with them.
func parseChange(typ, timestamp string, id, version int64, p *plantJSON) (change, string) {
	c := change{Type: typ, ID: id, Version: version}
	if p != nil {
		c.Plant = Plant{ID: p.ID, Name: p.Name, Tag: p.Tag}
	}
	at, err := time.Parse(eventTime, timestamp)
	if err != nil || at.Format(eventTime) != timestamp {
		return c, fmt.Sprintf("timestamp %q", timestamp)
	}
	c.At = at
	return c, c.wellFormed()
}

// add consumes the requests past those seen before; reqs is every request
// so far, in arrival order.
func (e *eventCheck) add(reqs []webhookstest.Request) {
	for _, req := range reqs[e.consumed:] {
		e.rep.Requests++
		if !req.Verified {
			e.rep.Unverified++
		}
		if req.Status < 200 || req.Status > 299 {
			continue
		}
		if e.seen[req.ID] {
			e.rep.Duplicates++
			continue
		}
		e.seen[req.ID] = true
		e.rep.Delivered++
		var env envelopeBody
		if err := json.Unmarshal(req.Body, &env); err != nil {
			e.rep.Malformed = append(e.rep.Malformed, fmt.Sprintf("%s: %v", req.Body, err))
			continue
		}
		c, bad := parseChange(env.Type, env.Timestamp, env.Data.ID, env.Data.Version, env.Data.Plant)
		if bad != "" {
			e.rep.Malformed = append(e.rep.Malformed, fmt.Sprintf("%s: %s", req.Body, bad))
			continue
		}
		e.event(req.ID, c)
	}
	e.consumed = len(reqs)
}

// event holds one delivered event against the writes and applies it.
func (e *eventCheck) event(webhookID string, c change) {
	switch {
	case c.Type == typeCreated && !e.creates[c.Plant]:
		e.rep.Foreign = append(e.rep.Foreign, fmt.Sprintf("id %d: %s version %d of %s, which no create that may have taken effect sent", c.ID, c.Type, c.Version, describe(c.Plant)))
	case c.Type == typeUpdated && !e.updates[c.Plant]:
		e.rep.Foreign = append(e.rep.Foreign, fmt.Sprintf("id %d: %s version %d of %s, which no update that may have taken effect sent", c.ID, c.Type, c.Version, describe(c.Plant)))
	case c.Type == typeDeleted && !e.deletes[c.ID]:
		e.rep.Foreign = append(e.rep.Foreign, fmt.Sprintf("id %d: %s version %d, and no delete that may have taken effect was sent to it", c.ID, c.Type, c.Version))
	}
	if c.Type == typeDeleted {
		e.deleted[c.ID] = true
	} else {
		e.stored[c.Plant] = true
	}
	byVersion := e.versions[c.ID]
	if byVersion == nil {
		byVersion = map[int64]string{}
		e.versions[c.ID] = byVersion
	}
	if other, ok := byVersion[c.Version]; ok {
		e.rep.Clashes = append(e.rep.Clashes, fmt.Sprintf("id %d: version %d in events %s and %s", c.ID, c.Version, other, webhookID))
	} else {
		byVersion[c.Version] = webhookID
	}
	if e.mirror.apply(c) {
		e.rep.Applied++
	} else {
		e.rep.Stale++
	}
}

// missing are the acknowledged writes without their event: a delete
// answered 204 removed a plant, so some plant.deleted of its id must have
// come; a create or update answered 200 holds its plant, put there by a
// change of that content (the workload's creates and updates never send the
// same plant, see updates), whose event carries exactly it.
func (e *eventCheck) missing() []string {
	var out []string
	for p := range e.acked {
		if !e.stored[p] {
			out = append(out, fmt.Sprintf("id %d: %s acknowledged, no plant.created or plant.updated of it delivered", p.ID, describe(p)))
		}
	}
	for id := range e.ackedDeletes {
		if !e.deleted[id] {
			out = append(out, fmt.Sprintf("id %d: a delete acknowledged (204), no plant.deleted of it delivered", id))
		}
	}
	slices.Sort(out)
	return out
}

// report is the finding so far, the mirror held against reads.
func (e *eventCheck) report(reads map[int64]finalRead, wall func(time.Duration) time.Time) EventReport {
	rep := e.rep
	rep.Mirror = compareMirror("the envelopes' mirror", e.mirror, reads, wall)
	rep.Missing = e.missing()
	return rep
}

// settled reports whether nothing more is awaited: every acknowledged
// write's event came and the mirror is the final reads.
func (rep EventReport) settled() bool {
	return len(rep.Missing) == 0 && len(rep.Mirror.Differ) == 0
}

// waitForEvents waits, after the final reads, until the envelope receiver
// has every acknowledged write's event and its mirror equals the final
// reads, or until limit after since (the load's end), and at least a few
// seconds more: the final reads may have taken that long.
func waitForEvents(ctx context.Context, r *webhookstest.Receiver, ops []Op, reads map[int64]finalRead, wall func(time.Duration) time.Time, since time.Time, limit time.Duration) EventReport {
	e := newEventCheck(ops)
	deadline := since.Add(limit)
	if soon := time.Now().Add(10 * time.Second); deadline.Before(soon) {
		deadline = soon
	}
	var rep EventReport
	err := poll.Until(ctx, 100*time.Millisecond, time.Until(deadline), func() (bool, error) {
		e.add(r.Requests())
		rep = e.report(reads, wall)
		return rep.settled(), nil
	})
	if err == nil {
		rep.Drain = time.Since(since)
	} else {
		rep.drainLimit = time.Since(since)
	}
	return rep
}

// violate records what broke the properties, naming an id.
func (rep EventReport) violate(c *Cluster) {
	if !rep.Checked {
		return
	}
	if rep.Unverified > 0 {
		c.Violate("webhook envelopes: %d of %d requests' signatures did not verify", rep.Unverified, rep.Requests)
	}
	report := func(what string, lines []string) {
		for i, l := range lines {
			if i == 5 {
				c.Violate("webhook envelopes: %s: and %d more", what, len(lines)-i)
				return
			}
			c.Violate("webhook envelopes: %s: %s", what, l)
		}
	}
	report("the mirror is not the final read", rep.Mirror.Differ)
	report("malformed", rep.Malformed)
	report("foreign event", rep.Foreign)
	report("missing event", rep.Missing)
	report("one version, two events", rep.Clashes)
}

// String is the report's summary lines.
func (rep EventReport) String() string {
	if !rep.Checked {
		return "webhook envelopes: not checked"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "webhook envelopes: %d events delivered in %d requests; duplicates (same webhook-id again): %d; signatures not verified: %d\n",
		rep.Delivered, rep.Requests, rep.Duplicates, rep.Unverified)
	fmt.Fprintf(&b, "  applied by version: %d events applied, %d stale discarded; ", rep.Applied, rep.Stale)
	if rep.settled() {
		fmt.Fprintf(&b, "settled %s after the load stopped\n", rep.Drain.Round(100*time.Millisecond))
	} else {
		fmt.Fprintf(&b, "NOT settled %s after the load stopped\n", rep.drainLimit.Round(100*time.Millisecond))
	}
	fmt.Fprintf(&b, "  mirror against the final reads: %d ids compared, %d differ, %d changed after their final read (not compared); malformed: %d; foreign: %d; acknowledged writes without their event: %d; versions shared by two events: %d",
		rep.Mirror.Compared, len(rep.Mirror.Differ), rep.Mirror.Late, len(rep.Malformed), len(rep.Foreign), len(rep.Missing), len(rep.Clashes))
	return b.String()
}
