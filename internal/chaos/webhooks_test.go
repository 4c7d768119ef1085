package chaos

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// TestWebhookBody: the body the check expects is the one docs/webhooks.md
// shows, byte for byte.
func TestWebhookBody(t *testing.T) {
	if got, want := webhookBody(Plant{ID: 7, Name: "p7-1", Tag: "red"}), `{"id":7,"name":"p7-1","tag":"red"}`; got != want {
		t.Fatalf("webhookBody = %s, want %s", got, want)
	}
}

// TestDeliveryCheck: acknowledged plants are matched by body, whichever
// create's event carried it; a webhook-id delivered twice is a duplicate;
// an event for a create whose answer was lost is counted, one for a plant
// only ever refused with 409 (or never sent) is foreign; an unverified
// signature is counted.
func TestDeliveryCheck(t *testing.T) {
	create := func(id int64, k int, a Answer) Op {
		p := plantFor(id, k)
		return Op{Kind: Create, ID: id, Name: p.Name, Tag: p.Tag, Answer: a}
	}
	ops := []Op{
		create(1, 0, OK),
		create(1, 0, OK), // an identical re-create: no event of its own
		create(2, 1, OK),
		create(2, 2, Conflict),
		create(3, 0, Unknown),
		create(4, 1, OK), // never delivered
		// Plant 5 stored twice, one event delivered.
		{Kind: Create, ID: 5, Name: plantFor(5, 0).Name, Tag: plantFor(5, 0).Tag, Answer: OK, Call: 1, Return: 2},
		{Kind: Delete, ID: 5, Answer: OK, Call: 3, Return: 4},
		{Kind: Create, ID: 5, Name: plantFor(5, 0).Name, Tag: plantFor(5, 0).Tag, Answer: OK, Call: 5, Return: 6},
		{Kind: Get, ID: 1, Answer: OK},
	}
	event := func(id string, p Plant, verified bool) webhookstest.Request {
		return webhookstest.Request{ID: id, Body: []byte(webhookBody(p)), Verified: verified, Status: 200}
	}
	d := newDeliveryCheck(ops)
	if d.pending != 4 || d.rep.Needed != 5 {
		t.Fatalf("pending %d, needed %d; want 4 acknowledged plants, 5 events", d.pending, d.rep.Needed)
	}
	reqs := []webhookstest.Request{
		event("msg_a", plantFor(1, 0), true),
		event("msg_b", plantFor(2, 1), true),
		event("msg_g", plantFor(5, 0), true),
	}
	d.add(reqs)
	reqs = append(reqs,
		event("msg_b", plantFor(2, 1), true),  // the same event again
		event("msg_c", plantFor(3, 0), true),  // its create's answer was lost
		event("msg_d", plantFor(2, 2), true),  // refused with 409
		event("msg_e", plantFor(9, 0), false), // never sent, not signed
		webhookstest.Request{ID: "msg_f", Body: []byte(webhookBody(plantFor(4, 1))), Verified: true, Status: 500},
	)
	d.add(reqs)
	rep := d.report()
	want := []string{webhookBody(plantFor(4, 1)) + " (0 of 1 events)", webhookBody(plantFor(5, 0)) + " (1 of 2 events)"}
	if d.pending != 2 || !slices.Equal(rep.Missing, want) {
		t.Fatalf("pending %d, missing %v; want %v", d.pending, rep.Missing, want)
	}
	if rep.Requests != 8 || rep.Delivered != 6 || rep.Duplicates != 1 || rep.Unacknowledged != 1 || rep.Unverified != 1 || rep.Acknowledged != 4 {
		t.Fatalf("report %+v", rep)
	}
	if !slices.Equal(rep.Foreign, []string{webhookBody(plantFor(2, 2)), webhookBody(plantFor(9, 0))}) {
		t.Fatalf("foreign %v", rep.Foreign)
	}
	c := &Cluster{}
	rep.violate(c)
	if v := c.Violations(); len(v) != 4 || !strings.Contains(v[0], "2 of 4 acknowledged plants short of their events") {
		t.Fatalf("violations %q", v)
	}
	if s := rep.String(); !strings.Contains(s, "2 plants NOT delivered") {
		t.Fatalf("summary line %q", s)
	}
}

// TestStoresNeeded: a plant created, deleted and created again, each
// acknowledged and each invoked after the one before returned, was stored
// twice; overlapping operations, a delete whose answer was lost or another
// id's delete prove nothing more. An update stores no event: neither the
// plant it sends nor the one it replaces needs one more.
func TestStoresNeeded(t *testing.T) {
	s := time.Second
	p, q := plantFor(1, 0), plantFor(2, 0)
	r := plantFor(1, names) // only an update sends it
	op := func(k Kind, pl Plant, a Answer, call, ret time.Duration) Op {
		return Op{Kind: k, ID: pl.ID, Name: pl.Name, Tag: pl.Tag, Answer: a, Call: call, Return: ret}
	}
	for _, tc := range []struct {
		name string
		ops  []Op
		want int
	}{
		{"one create", []Op{op(Create, p, OK, 0, s)}, 1},
		{"create, delete, create", []Op{op(Create, p, OK, 0, s), op(Delete, p, OK, 2*s, 3*s), op(Create, p, OK, 4*s, 5*s)}, 2},
		{"an identical re-create", []Op{op(Create, p, OK, 0, s), op(Create, p, OK, 2*s, 3*s)}, 1},
		{"the delete overlaps the first create", []Op{op(Create, p, OK, 0, 2*s), op(Delete, p, OK, s, 3*s), op(Create, p, OK, 4*s, 5*s)}, 1},
		{"the delete overlaps the second create", []Op{op(Create, p, OK, 0, s), op(Delete, p, OK, 2*s, 4*s), op(Create, p, OK, 3*s, 5*s)}, 1},
		{"the delete's answer was lost", []Op{op(Create, p, OK, 0, s), op(Delete, p, Unknown, 2*s, 3*s), op(Create, p, OK, 4*s, 5*s)}, 1},
		{"another id's delete", []Op{op(Create, p, OK, 0, s), op(Delete, q, OK, 2*s, 3*s), op(Create, p, OK, 4*s, 5*s)}, 1},
		{"an update, then a re-create refused", []Op{op(Create, p, OK, 0, s), op(Update, r, OK, 2*s, 3*s), op(Create, p, Conflict, 4*s, 5*s)}, 1},
		{"create, update, delete, create", []Op{op(Create, p, OK, 0, s), op(Update, r, OK, 2*s, 3*s), op(Delete, p, OK, 4*s, 5*s), op(Create, p, OK, 6*s, 7*s)}, 2},
		{"the first-returning create opens the chain", []Op{
			op(Create, p, OK, 0, 10*s), op(Create, p, OK, 0, s), op(Delete, p, OK, 2*s, 3*s), op(Create, p, OK, 4*s, 5*s),
			op(Delete, p, OK, 6*s, 7*s), op(Create, p, OK, 8*s, 9*s),
		}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			need := storesNeeded(tc.ops)
			if got := need[webhookBody(p)]; got != tc.want {
				t.Fatalf("needed %d, want %d", got, tc.want)
			}
			if got := need[webhookBody(r)]; got != 0 {
				t.Fatalf("an update's plant needs %d events, want none", got)
			}
		})
	}
}

// TestUpdatesSendNoCreatedPlant: the plants an update sends are never ones
// a create sends, so a create answered 200 found its plant stored by a
// create (storesNeeded rests on it).
func TestUpdatesSendNoCreatedPlant(t *testing.T) {
	for _, id := range []int64{1, 2, 3} {
		for u := names; u < names+updates; u++ {
			for c := range names {
				if a, b := plantFor(id, u), plantFor(id, c); a.Name == b.Name {
					t.Fatalf("update plant %v is also a create's %v", a, b)
				}
			}
		}
	}
}
