package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/poll"
	"github.com/plantstore/plantstore/modules/webhooks/webhookstest"
)

// The record of attempts is held against what the receivers saw: each
// receiver answers every request with a body naming its webhook-id and its
// number among that id's requests (webhookstest.AnswerBody), and the
// record keeps the answer's first bytes, so every attempt on record that
// got an answer names the one request it was. Every such attempt must
// match a request the receiver got, with the status it answered, and no
// two attempts may name one request; every message the receiver took
// (answered 2xx) must have a succeeded attempt on record. A request the
// record lacks is counted, not a violation: an attempt whose settling a
// fault prevented (a replica killed, its database out of reach) is not on
// record, by design, and is made again.

// AttemptsReport is the record of attempts held against the receivers.
type AttemptsReport struct {
	Checked    bool
	OnRecord   int      // attempts on record, every endpoint
	Matched    int      // of those, answered and matched to a receiver's request
	NoAnswer   int      // of those, without an answer (a timeout, a refused connection)
	Unrecorded int      // receivers' requests no attempt on record names
	Wrong      []string // attempts on record that name no request, the wrong status, or a request named twice
	Unsettled  []string // webhook-ids a receiver took with no succeeded attempt on record
	Waited     time.Duration
}

// checkAttempts reads every endpoint's attempts from the API at url and
// holds them against the receivers' requests, waiting at most limit for
// the last settled deliveries' attempts to be on record.
func checkAttempts(ctx context.Context, url string, receivers map[string]*webhookstest.Receiver, limit time.Duration) AttemptsReport {
	api, err := client.New(url, client.WithToken(Token))
	if err != nil {
		return AttemptsReport{Checked: true, Wrong: []string{err.Error()}}
	}
	start := time.Now()
	var rep AttemptsReport
	// Complete or not, the comparison tells what is on record.
	_ = poll.Until(ctx, 500*time.Millisecond, limit, func() (bool, error) {
		rep = compareAttempts(ctx, api, receivers)
		return len(rep.Unsettled) == 0 && len(rep.Wrong) == 0, nil
	})
	rep.Waited = time.Since(start)
	return rep
}

// compareAttempts is one comparison of the record with the receivers.
func compareAttempts(ctx context.Context, api *client.Client, receivers map[string]*webhookstest.Receiver) AttemptsReport {
	rep := AttemptsReport{Checked: true}
	for _, endpoint := range slices.Sorted(maps.Keys(receivers)) {
		got := map[string]webhookstest.Request{} // by the answer the receiver gave
		took := map[string]bool{}                // webhook-ids answered 2xx
		for _, req := range receivers[endpoint].Requests() {
			got[req.Answer] = req
			if req.Status >= 200 && req.Status < 300 {
				took[req.ID] = true
			}
		}
		named := map[string]bool{}
		succeeded := map[string]bool{}
		for a, err := range api.AllWebhookAttempts(ctx, endpoint, client.WebhookAttemptsOptions{Limit: 1000}) {
			if err != nil {
				rep.Wrong = append(rep.Wrong, fmt.Sprintf("%s: reading the attempts: %v", endpoint, err))
				break
			}
			rep.OnRecord++
			if a.Status == 0 {
				rep.NoAnswer++
				continue
			}
			req, ok := got[a.Answer]
			switch {
			case !ok || a.Answer == "" || req.ID != a.WebhookID:
				rep.Wrong = append(rep.Wrong, fmt.Sprintf("%s: attempt %s of %s answered %d %q: the receiver gave no such answer", endpoint, a.ID, a.WebhookID, a.Status, a.Answer))
			case req.Status != a.Status:
				rep.Wrong = append(rep.Wrong, fmt.Sprintf("%s: attempt %s of %s is on record as %d, the receiver answered %d", endpoint, a.ID, a.WebhookID, a.Status, req.Status))
			case named[a.Answer]:
				rep.Wrong = append(rep.Wrong, fmt.Sprintf("%s: attempt %s of %s names request %d, which another attempt on record names", endpoint, a.ID, a.WebhookID, req.N))
			default:
				named[a.Answer] = true
				rep.Matched++
				if a.Succeeded {
					succeeded[a.WebhookID] = true
				}
			}
		}
		rep.Unrecorded += len(got) - len(named)
		for id := range took {
			if !succeeded[id] {
				rep.Unsettled = append(rep.Unsettled, endpoint+": "+id)
			}
		}
	}
	slices.Sort(rep.Unsettled)
	return rep
}

// violate records what broke the property.
func (rep AttemptsReport) violate(c *Cluster) {
	for i, l := range rep.Wrong {
		if i == 5 {
			c.Violate("the record of attempts: and %d more", len(rep.Wrong)-i)
			break
		}
		c.Violate("the record of attempts: %s", l)
	}
	if n := len(rep.Unsettled); n > 0 {
		c.Violate("the record of attempts: %d messages a receiver took have no succeeded attempt on record, e.g. %s", n, rep.Unsettled[0])
	}
}

// String is the report's summary line.
func (rep AttemptsReport) String() string {
	if !rep.Checked {
		return "attempts: not checked"
	}
	return fmt.Sprintf("attempts: %d on record, %d matched to the receivers' requests, %d without an answer, %d requests not on record (settling cut off by a fault), %d wrong, %d taken without a succeeded attempt (waited %s)",
		rep.OnRecord, rep.Matched, rep.NoAnswer, rep.Unrecorded, len(rep.Wrong), len(rep.Unsettled), rep.Waited.Round(time.Millisecond))
}
