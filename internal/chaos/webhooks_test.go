package chaos

import (
	"slices"
	"strings"
	"testing"

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
		{Kind: Get, ID: 1, Answer: OK},
	}
	event := func(id string, p Plant, verified bool) webhookstest.Request {
		return webhookstest.Request{ID: id, Body: []byte(webhookBody(p)), Verified: verified, Status: 200}
	}
	d := newDeliveryCheck(ops)
	if d.pending != 3 {
		t.Fatalf("pending %d, want 3 acknowledged plants", d.pending)
	}
	reqs := []webhookstest.Request{
		event("msg_a", plantFor(1, 0), true),
		event("msg_b", plantFor(2, 1), true),
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
	if d.pending != 1 || !slices.Equal(rep.Missing, []string{webhookBody(plantFor(4, 1))}) {
		t.Fatalf("pending %d, missing %v; want plant 4 alone", d.pending, rep.Missing)
	}
	if rep.Requests != 7 || rep.Delivered != 5 || rep.Duplicates != 1 || rep.Unacknowledged != 1 || rep.Unverified != 1 || rep.Acknowledged != 3 {
		t.Fatalf("report %+v", rep)
	}
	if !slices.Equal(rep.Foreign, []string{webhookBody(plantFor(2, 2)), webhookBody(plantFor(9, 0))}) {
		t.Fatalf("foreign %v", rep.Foreign)
	}
	c := &Cluster{}
	rep.violate(c)
	if v := c.Violations(); len(v) != 4 || !strings.Contains(v[0], "1 of 3 acknowledged creates not delivered") {
		t.Fatalf("violations %q", v)
	}
	if s := rep.String(); !strings.Contains(s, "1 NOT delivered") {
		t.Fatalf("summary line %q", s)
	}
}
