package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// Webhook delivery is one of the run's checked properties (issue 18):
// every replica sends every new plant to one receiver on loopback, up for
// the whole run, and at the end every create answered 200 must have been
// delivered, signed, with exactly that plant as its body.

// Webhooks is a run's webhook receivers and the secret they verify with.
type Webhooks struct {
	Receiver *webhookstest.Receiver // the origin endpoint's: plant.created, the plant as its body
	// Envelopes, when set, is a second endpoint's receiver: every change,
	// as an envelope (format: envelope, no events: all three types),
	// checked by events.go.
	Envelopes *webhookstest.Receiver
	Secret    string
}

const (
	// webhookTimeout is one attempt's limit. It is short because it sets
	// the lease a claimed event is held for (2×timeout+10 s = 14 s): a
	// replica killed or partitioned with events in flight delays them that
	// long, and the end-of-run wait must not be dominated by it.
	webhookTimeout = 2 * time.Second
	// webhookRetries waits of webhookRetryWait: at least three minutes of
	// failed attempts in a row before a dead letter, more than any fault
	// of a run lasts, so a missing delivery is the sender's fault, not the
	// schedule's.
	webhookRetries   = 360
	webhookRetryWait = "500ms"
	// webhookDrainLimit bounds the end-of-run wait: generous next to the
	// lease, so that only an event that is truly lost fails the run.
	webhookDrainLimit = 90 * time.Second
)

// setup writes the webhooks file into dir (JSON, which the file's YAML
// reader takes as is) with the receiver as the first endpoint and the
// envelope receiver, if any, as the second, and returns
// the replicas' webhook environment.
func (w *Webhooks) setup(dir string) ([]string, error) {
	type endpoint struct {
		Name    string   `json:"name"`
		URL     string   `json:"url"`
		Secrets []string `json:"secrets"`
		Format  string   `json:"format,omitempty"`
	}
	endpoints := []endpoint{{Name: "chaos", URL: w.Receiver.URL, Secrets: []string{w.Secret}}}
	if w.Envelopes != nil {
		endpoints = append(endpoints, endpoint{Name: "chaos-envelope", URL: w.Envelopes.URL, Secrets: []string{w.Secret}, Format: "envelope"})
	}
	data, err := json.Marshal(map[string][]endpoint{"endpoints": endpoints})
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
	Requests       int      // every request the receiver got
	Delivered      int      // distinct webhook-ids answered 2xx
	Duplicates     int      // 2xx requests for a webhook-id already delivered
	Unverified     int      // requests whose signature did not verify
	Acknowledged   int      // distinct plants (id, name, tag) of creates answered 200
	Needed         int      // events those creates prove were written, at least (see storesNeeded)
	Missing        []string // plants with fewer delivered events than needed
	Unacknowledged int      // delivered events for plants no create saw answered 200
	Extra          int      // delivered events for acknowledged plants beyond those needed
	Foreign        []string // delivered bodies no create could have stored
	Lost           []string // delivered bodies of plants stored, then lost (see lostAnnounced, held against the final reads by CheckLost)

	got, need map[string]int // body: events delivered, needed
	Drain     time.Duration  // from the load's end until every needed event was delivered
}

// deliveryCheck follows the receiver's requests, in arrival order, against
// the creates of a history.
type deliveryCheck struct {
	need     map[string]int  // body: events the acknowledged creates need, at least
	possible map[string]bool // bodies of creates that may have stored their plant: all but 409s
	events   map[string]bool // webhook-ids delivered
	got      map[string]int  // body: distinct events delivered
	pending  int             // bodies with fewer events delivered than needed
	seen     int             // requests consumed
	rep      WebhookReport
}

// newDeliveryCheck takes the creates and deletes of ops. Plants are
// compared by body, (id, name, tag), not by create: an identical re-create
// answers 200 without an event of its own, the earlier create's event
// carrying the same body. A 409 stored nothing, so its plant's event may
// come only from another create of the same plant.
func newDeliveryCheck(ops []Op) *deliveryCheck {
	d := &deliveryCheck{need: storesNeeded(ops), possible: map[string]bool{}, events: map[string]bool{}, got: map[string]int{}}
	for _, op := range ops {
		if op.Kind == Create && op.Answer != Conflict { // unknown, ok, or unexpected (which fails the run by itself)
			d.possible[webhookBody(Plant{ID: op.ID, Name: op.Name, Tag: op.Tag})] = true
		}
	}
	d.pending = len(d.need)
	d.rep = WebhookReport{Checked: true, Acknowledged: len(d.need)}
	for _, n := range d.need {
		d.rep.Needed += n
	}
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
		d.got[body]++
		switch need := d.need[body]; {
		case !d.possible[body]:
			d.rep.Foreign = append(d.rep.Foreign, body)
		case need == 0:
			d.rep.Unacknowledged++
		case d.got[body] == need:
			d.pending--
		}
	}
	d.seen = len(reqs)
}

// report is the finding so far.
func (d *deliveryCheck) report() WebhookReport {
	rep := d.rep
	rep.Missing = nil
	for body, n := range d.need {
		if d.got[body] < n {
			rep.Missing = append(rep.Missing, fmt.Sprintf("%s (%d of %d events)", body, d.got[body], n))
		}
		rep.Extra += max(0, d.got[body]-n)
	}
	slices.Sort(rep.Missing)
	rep.got, rep.need = d.got, d.need
	return rep
}

// CheckLost fills in Lost from the whole history, the final reads
// included (the wait for the deliveries starts before them).
func (rep *WebhookReport) CheckLost(ops []Op) {
	if rep.Checked {
		rep.Lost = lostAnnounced(ops, rep.got, rep.need)
	}
}

// lostAnnounced are the delivered plants whose change was lost: an event
// says plant P was stored under id X; when no create of P was answered 200
// (the survivor and linearizability checks cover those), and no delete or
// update of X that may have taken effect returned after P's first create
// was invoked, X must still hold P, so a final read of X without P means
// the store that the event announced was lost (a commit the primary alone
// had, before a failover).
func lostAnnounced(ops []Op, got, need map[string]int) []string {
	final := map[int64]Op{}
	for _, op := range ops {
		if op.Kind == Get && (op.Answer == OK || op.Answer == NotFound) {
			if f, ok := final[op.ID]; !ok || op.Call > f.Call {
				final[op.ID] = op
			}
		}
	}
	var lost []string
	for body, n := range got {
		if n == 0 || need[body] > 0 {
			continue
		}
		var p Plant
		if json.Unmarshal([]byte(body), &p) != nil {
			continue
		}
		first := time.Duration(-1)
		for _, op := range ops {
			if op.Kind == Create && op.ID == p.ID && op.Name == p.Name && op.Tag == p.Tag && (first < 0 || op.Call < first) {
				first = op.Call
			}
		}
		f, ok := final[p.ID]
		if first < 0 || !ok || f.Call < first {
			continue
		}
		overwritten := false
		for _, op := range ops {
			if op.ID == p.ID && (op.Kind == Delete || op.Kind == Update) && (op.Answer == OK || op.Answer == Unknown) &&
				(op.Answer == Unknown || op.Return > first) {
				overwritten = true
				break
			}
		}
		if overwritten {
			continue
		}
		if f.Answer != OK || f.Got.Name != p.Name || f.Got.Tag != p.Tag {
			lost = append(lost, body)
		}
	}
	slices.Sort(lost)
	return lost
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
		err := poll.Until(ctx, 100*time.Millisecond, time.Until(since.Add(webhookDrainLimit)), func() (bool, error) {
			d.add(w.Receiver.Requests())
			return d.pending == 0, nil
		})
		if err == nil {
			d.rep.Drain = time.Since(since)
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
		c.Violate("webhooks: %d of %d acknowledged plants short of their events %s after the load's end, e.g. %s", n, rep.Acknowledged, webhookDrainLimit, rep.Missing[0])
	}
	if rep.Unverified > 0 {
		c.Violate("webhooks: %d of %d requests' signatures did not verify", rep.Unverified, rep.Requests)
	}
	for _, body := range rep.Foreign {
		c.Violate("webhooks: delivered %s, a plant no create could have stored", body)
	}
	if n := len(rep.Lost); n > 0 {
		c.Violate("webhooks: %d events announced a plant that was then lost, e.g. %s", n, rep.Lost[0])
	}
}

// String is the report's summary lines.
func (rep WebhookReport) String() string {
	if !rep.Checked {
		return "webhooks: not checked"
	}
	s := fmt.Sprintf("webhooks: %d events delivered in %d requests; duplicates (same webhook-id again): %d; signatures not verified: %d\n",
		rep.Delivered, rep.Requests, rep.Duplicates, rep.Unverified)
	s += fmt.Sprintf("  acknowledged creates: %d plants needing at least %d events: ", rep.Acknowledged, rep.Needed)
	if len(rep.Missing) == 0 {
		s += fmt.Sprintf("all delivered %s after the load stopped\n", rep.Drain.Round(100*time.Millisecond))
	} else {
		s += fmt.Sprintf("%d plants NOT delivered within %s\n", len(rep.Missing), webhookDrainLimit)
	}
	s += fmt.Sprintf("  events for plants no create saw answered 200: %d; beyond the acknowledged creates' minimum: %d; for plants no create could have stored: %d; for plants stored, then lost: %d",
		rep.Unacknowledged, rep.Extra, len(rep.Foreign), len(rep.Lost))
	return s
}
