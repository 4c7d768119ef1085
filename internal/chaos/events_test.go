package chaos

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// base is the hand-made histories' start, as the store's clock reads it.
var base = time.Date(2026, 11, 25, 19, 40, 0, 0, time.UTC)

func wallOf(d time.Duration) time.Time { return base.Add(d) }

// stamp is the timestamp of a change committed at d into the history.
func stamp(d time.Duration) string { return base.Add(d).Format(eventTime) }

// envelopeOf is the envelope the contract writes for a change of p (or of
// p's id, for plant.deleted) at version v, committed at d.
func envelopeOf(typ string, p Plant, v int64, d time.Duration) []byte {
	data := map[string]any{"id": p.ID, "version": v}
	if typ != typeDeleted {
		data["plant"] = map[string]any{"id": p.ID, "name": p.Name, "tag": p.Tag}
	}
	b, _ := json.Marshal(map[string]any{"type": typ, "timestamp": stamp(d), "data": data})
	return b
}

func delivered(id string, body []byte) webhookstest.Request {
	return webhookstest.Request{ID: id, Body: body, Verified: true, Status: 200}
}

// eventHistory: id 1 created, updated, deleted and created again, all
// acknowledged, read at the end; id 2 created and deleted, read absent.
func eventHistory() (ops []Op, p, q, r Plant) {
	ms := time.Millisecond
	p, q, r = plantFor(1, 0), plantFor(1, names), plantFor(2, 1)
	w := func(k Kind, pl Plant, a Answer, call time.Duration) Op {
		return Op{Kind: k, ID: pl.ID, Name: pl.Name, Tag: pl.Tag, Answer: a, Call: call, Return: call + 5*ms}
	}
	ops = []Op{
		w(Create, p, OK, 0), w(Update, q, OK, 10*ms), w(Delete, Plant{ID: 1}, OK, 20*ms), w(Create, p, OK, 30*ms),
		w(Create, r, OK, 0), w(Delete, Plant{ID: 2}, OK, 10*ms),
		{Kind: Get, ID: 1, Answer: OK, Got: p, Call: 100 * ms, Return: 105 * ms},
		{Kind: Get, ID: 2, Answer: NotFound, Call: 100 * ms, Return: 105 * ms},
	}
	return ops, p, q, r
}

// TestEventCheck: the envelopes, applied per plant by version whatever
// their order of arrival, give the final reads; each kind of violation is
// found and names its id.
func TestEventCheck(t *testing.T) {
	ms := time.Millisecond
	ops, p, q, r := eventHistory()
	all := []webhookstest.Request{
		delivered("msg_4", envelopeOf(typeCreated, p, 4, 31*ms)), // the newest first: the rest of id 1's are stale
		delivered("msg_1", envelopeOf(typeCreated, p, 1, 1*ms)),
		delivered("msg_2", envelopeOf(typeUpdated, q, 2, 11*ms)),
		delivered("msg_2", envelopeOf(typeUpdated, q, 2, 11*ms)), // the same event again
		delivered("msg_3", envelopeOf(typeDeleted, Plant{ID: 1}, 3, 21*ms)),
		delivered("msg_6", envelopeOf(typeDeleted, Plant{ID: 2}, 6, 11*ms)),
		delivered("msg_5", envelopeOf(typeCreated, r, 5, 1*ms)),
	}
	without := func(ids ...string) []webhookstest.Request {
		return slices.DeleteFunc(slices.Clone(all), func(req webhookstest.Request) bool { return slices.Contains(ids, req.ID) })
	}
	check := func(reqs []webhookstest.Request, ops []Op) EventReport {
		e := newEventCheck(ops)
		e.add(reqs[:2])
		e.add(reqs) // the receiver's requests so far, twice: each consumed once
		return e.report(finalReads(ops), wallOf)
	}

	t.Run("clean, out of order", func(t *testing.T) {
		rep := check(all, ops)
		if rep.Requests != 7 || rep.Delivered != 6 || rep.Duplicates != 1 || rep.Applied != 2 || rep.Stale != 4 {
			t.Fatalf("counts %+v, want 7 requests, 6 delivered, 1 duplicate, 2 applied, 4 stale", rep)
		}
		if !rep.settled() || rep.Mirror.Compared != 2 || rep.Mirror.Late != 0 || len(rep.Foreign)+len(rep.Malformed)+len(rep.Clashes) != 0 {
			t.Fatalf("report %+v, want a clean one on 2 ids", rep)
		}
		c := &Cluster{}
		rep.violate(c)
		if v := c.Violations(); len(v) != 0 {
			t.Fatalf("violations %q", v)
		}
	})
	t.Run("the newest change's event missing: the stale ones make another mirror", func(t *testing.T) {
		rep := check(without("msg_4"), ops)
		want := []string{"id 1: final read p1-0/green, the envelopes' mirror has absent (newest change plant.deleted version 3)"}
		if !slices.Equal(rep.Mirror.Differ, want) || len(rep.Missing) != 0 {
			t.Fatalf("mirror differs %q, missing %q; want %q and none missing", rep.Mirror.Differ, rep.Missing, want)
		}
		c := &Cluster{}
		rep.violate(c)
		if v := c.Violations(); len(v) != 1 || !strings.Contains(v[0], "the mirror is not the final read: id 1:") {
			t.Fatalf("violations %q", v)
		}
	})
	t.Run("a change committed after its final read", func(t *testing.T) {
		late := append(slices.Clone(all), delivered("msg_7", envelopeOf(typeDeleted, Plant{ID: 1}, 7, 102*ms)))
		more := append(slices.Clone(ops), Op{Kind: Delete, ID: 1, Answer: Unknown, Call: 40 * ms, Return: 90 * ms})
		rep := check(late, more)
		if len(rep.Mirror.Differ) != 0 || rep.Mirror.Late != 1 {
			t.Fatalf("mirror %+v, want id 1 late, none differing", rep.Mirror)
		}
	})
	t.Run("foreign events", func(t *testing.T) {
		refused := plantFor(1, 2) // only a 409 sent it
		failed := plantFor(1, names+1)
		more := append(slices.Clone(ops),
			Op{Kind: Create, ID: 1, Name: refused.Name, Tag: refused.Tag, Answer: Conflict, Call: 40 * ms, Return: 45 * ms},
			Op{Kind: Update, ID: 1, Name: failed.Name, Tag: failed.Tag, IfMatch: `"x"`, Answer: PreconditionFailed, Call: 40 * ms, Return: 45 * ms},
			Op{Kind: Delete, ID: 3, Answer: NotFound, Call: 40 * ms, Return: 45 * ms},
		)
		reqs := append(slices.Clone(all),
			delivered("msg_8", envelopeOf(typeCreated, refused, 8, 41*ms)),
			delivered("msg_9", envelopeOf(typeUpdated, failed, 9, 41*ms)),
			delivered("msg_10", envelopeOf(typeDeleted, Plant{ID: 3}, 10, 41*ms)),
			delivered("msg_11", envelopeOf(typeCreated, q, 11, 41*ms)), // an update's plant, as created
		)
		rep := check(reqs, more)
		want := []string{
			"id 1: plant.created version 8 of p1-2/green, which no create that may have taken effect sent",
			"id 1: plant.updated version 9 of p1-4/green, which no update that may have taken effect sent",
			"id 3: plant.deleted version 10, and no delete that may have taken effect was sent to it",
			"id 1: plant.created version 11 of p1-3/red, which no create that may have taken effect sent",
		}
		if !slices.Equal(rep.Foreign, want) {
			t.Fatalf("foreign %q, want %q", rep.Foreign, want)
		}
	})
	t.Run("an acknowledged delete without its event", func(t *testing.T) {
		rep := check(without("msg_6"), ops)
		want := []string{"id 2: a delete acknowledged (204), no plant.deleted of it delivered"}
		if !slices.Equal(rep.Missing, want) || rep.settled() {
			t.Fatalf("missing %q, want %q, and not settled", rep.Missing, want)
		}
	})
	t.Run("an acknowledged update without its event", func(t *testing.T) {
		rep := check(without("msg_2"), ops)
		want := []string{"id 1: p1-3/red acknowledged, no plant.created or plant.updated of it delivered"}
		if !slices.Equal(rep.Missing, want) {
			t.Fatalf("missing %q, want %q", rep.Missing, want)
		}
	})
	t.Run("two events with one version", func(t *testing.T) {
		reqs := append(slices.Clone(all), delivered("msg_x", envelopeOf(typeUpdated, q, 2, 11*ms)))
		rep := check(reqs, ops)
		want := []string{"id 1: version 2 in events msg_2 and msg_x"}
		if !slices.Equal(rep.Clashes, want) {
			t.Fatalf("clashes %q, want %q", rep.Clashes, want)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		reqs := append(slices.Clone(all),
			delivered("msg_y", []byte(`{"id":1,"name":"p1-0","tag":"green"}`)), // an origin body
			delivered("msg_z", []byte(`{"type":"plant.deleted","timestamp":"2026-11-25T19:40:00Z","data":{"id":1,"version":12}}`)),
		)
		rep := check(reqs, ops)
		if len(rep.Malformed) != 2 || !strings.Contains(rep.Malformed[0], `timestamp ""`) || !strings.Contains(rep.Malformed[1], "timestamp") {
			t.Fatalf("malformed %q", rep.Malformed)
		}
	})
}

// TestFinalReads: the latest definite get of an id, when it came after
// every write of the id; a read during the load is not compared.
func TestFinalReads(t *testing.T) {
	p := plantFor(1, 0)
	ops := []Op{
		at(Op{Kind: Create, ID: 1, Name: p.Name, Tag: p.Tag, Answer: OK}, 0, 10),
		at(Op{Kind: Get, ID: 1, Answer: OK, Got: p}, 20, 30),
		at(Op{Kind: Get, ID: 1, Answer: Unknown}, 40, 50),
		at(Op{Kind: Get, ID: 2, Answer: NotFound}, 5, 8),
		at(Op{Kind: Delete, ID: 2, Answer: Unknown}, 6, 12),
		at(Op{Kind: Get, ID: 3, Answer: NotFound}, 5, 8),
	}
	reads := finalReads(ops)
	want := map[int64]finalRead{1: {Plant: p, Call: 20}, 3: {Plant: Plant{ID: 3}, Call: 5}}
	if len(reads) != len(want) || reads[1] != want[1] || reads[3] != want[3] {
		t.Fatalf("final reads %+v, want %+v", reads, want)
	}
}
