package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// Webhook delivery is one of the run's checked properties (issue 18):
// every replica sends every new plant to one receiver on loopback, up for
// the whole run, and at the end every create answered 200 must have been
// delivered, signed, with exactly that plant as its body.

// Webhooks is a run's webhook receiver and the secret it verifies with.
type Webhooks struct {
	Receiver *webhookstest.Receiver
	Secret   string
}

const (
	// webhookTimeout is one attempt's limit. It is short because it sets
	// the lease a claimed event is held for (2×timeout+10 s = 14 s): a
	// replica killed or partitioned with events in flight delays them that
	// long, and the end-of-run wait must not be dominated by it.
	webhookTimeout = 2 * time.Second
	// webhookRetries × webhookRetryWait is far past a run's end state: an
	// event that keeps failing (a replica cut from its receiver's answer by
	// a fault) is retried, never dead-lettered, so a missing delivery is
	// the sender's fault, not the schedule's.
	webhookRetries   = 360
	webhookRetryWait = "500ms"
	// webhookDrainLimit bounds the end-of-run wait: generous next to the
	// lease, so that only an event that is truly lost fails the run.
	webhookDrainLimit = 90 * time.Second
)

// setup writes the webhooks file into dir (JSON, which the file's YAML
// reader takes as is) with the receiver as the one endpoint, and returns
// the replicas' webhook environment.
func (w *Webhooks) setup(dir string) ([]string, error) {
	type endpoint struct {
		Name    string   `json:"name"`
		URL     string   `json:"url"`
		Secrets []string `json:"secrets"`
	}
	data, err := json.Marshal(map[string][]endpoint{"endpoints": {{Name: "chaos", URL: w.Receiver.URL, Secrets: []string{w.Secret}}}})
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "webhooks.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return nil, err
	}
	return []string{
		"PLANTSTORE_WEBHOOKS_FILE=" + file,
		// The receiver is on loopback and speaks plain http.
		"PLANTSTORE_WEBHOOKS_ALLOW_PRIVATE=true",
		"PLANTSTORE_WEBHOOKS_ALLOW_HTTP=true",
		"PLANTSTORE_WEBHOOKS_POLL_INTERVAL=100ms",
		"PLANTSTORE_WEBHOOKS_TIMEOUT=" + webhookTimeout.String(),
		"PLANTSTORE_WEBHOOKS_RETRY_SCHEDULE=" + strings.TrimSuffix(strings.Repeat(webhookRetryWait+",", webhookRetries), ","),
	}, nil
}

// webhookBody is the event a plant's create sends: the plant as stored
// (docs/webhooks.md), id, name and tag in that order. The workload always
// sends a tag.
func webhookBody(p Plant) string {
	b, _ := json.Marshal(struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
		Tag  string `json:"tag,omitempty"`
	}{p.ID, p.Name, p.Tag})
	return string(b)
}

// WebhookReport is what the receiver got, held against the history.
type WebhookReport struct {
	Checked        bool
	Requests       int           // every request the receiver got
	Delivered      int           // distinct webhook-ids answered 2xx
	Duplicates     int           // 2xx requests for a webhook-id already delivered
	Unverified     int           // requests whose signature did not verify
	Acknowledged   int           // distinct plants (id, name, tag) of creates answered 200
	Missing        []string      // their bodies with no delivered event
	Unacknowledged int           // delivered events for plants no create saw answered 200
	Foreign        []string      // delivered bodies no create could have stored
	Drain          time.Duration // from the load's end until every acknowledged plant was delivered
}

// deliveryCheck follows the receiver's requests, in arrival order, against
// the creates of a history.
type deliveryCheck struct {
	acked    map[string]bool // bodies of creates answered 200
	possible map[string]bool // bodies of creates that may have stored their plant: all but 409s
	events   map[string]bool // webhook-ids delivered
	bodies   map[string]bool // bodies delivered
	pending  int             // acknowledged bodies not delivered yet
	seen     int             // requests consumed
	rep      WebhookReport
}

// newDeliveryCheck takes the creates of ops. An identical re-create
// answers 200 without a new event, but the first create's event has the
// same body: plants are compared by body, (id, name, tag), not by create.
// A 409 stored nothing, so its plant's event may come only from another
// create of the same plant.
func newDeliveryCheck(ops []Op) *deliveryCheck {
	d := &deliveryCheck{acked: map[string]bool{}, possible: map[string]bool{}, events: map[string]bool{}, bodies: map[string]bool{}}
	for _, op := range ops {
		if op.Kind != Create {
			continue
		}
		body := webhookBody(Plant{ID: op.ID, Name: op.Name, Tag: op.Tag})
		switch op.Answer {
		case OK:
			d.acked[body], d.possible[body] = true, true
		case Conflict:
		default: // unknown, or unexpected (which fails the run by itself)
			d.possible[body] = true
		}
	}
	d.pending = len(d.acked)
	d.rep = WebhookReport{Checked: true, Acknowledged: len(d.acked)}
	return d
}

// add consumes the requests past those seen before; reqs is every request
// so far, in arrival order, as the receiver gives them.
func (d *deliveryCheck) add(reqs []webhookstest.Request) {
	for _, req := range reqs[d.seen:] {
		d.rep.Requests++
		if !req.Verified {
			d.rep.Unverified++
		}
		if req.Status < 200 || req.Status > 299 {
			continue
		}
		if d.events[req.ID] {
			d.rep.Duplicates++
			continue
		}
		d.events[req.ID] = true
		d.rep.Delivered++
		body := string(req.Body)
		switch {
		case !d.possible[body]:
			d.rep.Foreign = append(d.rep.Foreign, body)
		case !d.acked[body]:
			d.rep.Unacknowledged++
		case !d.bodies[body]:
			d.pending--
		}
		d.bodies[body] = true
	}
	d.seen = len(reqs)
}

// report is the finding so far.
func (d *deliveryCheck) report() WebhookReport {
	rep := d.rep
	rep.Missing = nil
	for body := range d.acked {
		if !d.bodies[body] {
			rep.Missing = append(rep.Missing, body)
		}
	}
	return rep
}

// webhookWait waits, in the background, until every acknowledged create
// of ops has been delivered to w's receiver, or webhookDrainLimit passed.
type webhookWait struct {
	done chan WebhookReport
}

// waitForWebhooks starts the wait; since is when the load stopped.
func waitForWebhooks(ctx context.Context, w *Webhooks, ops []Op, since time.Time) *webhookWait {
	ww := &webhookWait{done: make(chan WebhookReport, 1)}
	go func() {
		d := newDeliveryCheck(ops)
		deadline := since.Add(webhookDrainLimit)
		for {
			d.add(w.Receiver.Requests())
			if d.pending == 0 {
				d.rep.Drain = time.Since(since)
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				break
			}
			sleep(ctx, 100*time.Millisecond)
		}
		// Requests that came after the last acknowledged plant's are held
		// against the history too.
		d.add(w.Receiver.Requests())
		ww.done <- d.report()
	}()
	return ww
}

// result waits for the wait's end.
func (ww *webhookWait) result() WebhookReport { return <-ww.done }

// violate records what broke the property.
func (rep WebhookReport) violate(c *Cluster) {
	if n := len(rep.Missing); n > 0 {
		c.Violate("webhooks: %d of %d acknowledged creates not delivered within %s of the load's end, e.g. %s", n, rep.Acknowledged, webhookDrainLimit, rep.Missing[0])
	}
	if rep.Unverified > 0 {
		c.Violate("webhooks: %d of %d requests' signatures did not verify", rep.Unverified, rep.Requests)
	}
	for _, body := range rep.Foreign {
		c.Violate("webhooks: delivered %s, a plant no create could have stored", body)
	}
}

// String is the report's summary line.
func (rep WebhookReport) String() string {
	if !rep.Checked {
		return "webhooks: not checked"
	}
	s := fmt.Sprintf("webhooks: %d events delivered (%d requests; duplicates, same webhook-id again: %d; signatures not verified: %d); "+
		"acknowledged creates: %d plants, ", rep.Delivered, rep.Requests, rep.Duplicates, rep.Unverified, rep.Acknowledged)
	if len(rep.Missing) == 0 {
		s += fmt.Sprintf("all delivered %s after the load stopped", rep.Drain.Round(100*time.Millisecond))
	} else {
		s += fmt.Sprintf("%d NOT delivered within %s", len(rep.Missing), webhookDrainLimit)
	}
	s += fmt.Sprintf("; events for unacknowledged creates: %d; for plants no create could have stored: %d", rep.Unacknowledged, len(rep.Foreign))
	return s
}
