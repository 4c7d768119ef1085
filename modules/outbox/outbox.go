// Package outbox is the contract between the plant stores and the webhook
// sender: the deliveries a store keeps until they succeed, written in the
// commit of the change they announce (a transactional outbox), claimed by a
// sender, settled as delivered, retried later, or buried as a dead letter;
// and the plan a store asks, inside that commit, for the rows of the
// changes (see package changes) it makes. Each store that keeps an outbox
// (bolt in the plants file, PostgreSQL in the plants database) implements
// Store, owning its schema and its queries; the suite in outboxtest holds
// every one of them to the same semantics. The package knows no store and
// no sender.
package outbox

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/plantstore/plantstore/modules/changes"
)

// Delivery is one event on its way to one endpoint, as claimed for an
// attempt.
type Delivery struct {
	// ID is the webhook-id: unique per event and endpoint, the same on every
	// attempt, so that a receiver can drop a duplicate.
	ID       string
	Endpoint string
	// Kind and Version are the change's, Version as its commit gave it
	// (see changes.Committed); CreatedAt is that commit's time.
	Kind    changes.Kind
	Version int64
	// Body is the event's data as the plan wrote it (see Event): a sender
	// sends it as is, or wrapped in an envelope with Kind and Version.
	Body []byte
	// TraceParent is the create's W3C traceparent, so that the delivery
	// joins its trace; "" when the create was not traced.
	TraceParent string
	CreatedAt   time.Time
	// Attempt is this attempt's number, from 1.
	Attempt int
	// Outcome is the attempt as the sender made it, to keep on record in
	// the commit that settles the delivery (Delivered, Retry, Bury); nil
	// records none.
	Outcome *Attempt

	// Key is where the store filed the delivery, for the store alone (bolt:
	// its key); a sender passes the delivery back as it got it.
	Key []byte
}

// DeadLetter is a delivery that ran out of attempts. It is kept until it is
// redelivered.
type DeadLetter struct {
	ID       string
	Endpoint string
	// Kind and Version are the change's, as its delivery carried them:
	// the body alone cannot say which change it announced (a deletion's
	// is the id alone).
	Kind      changes.Kind
	Version   int64
	Body      []byte
	CreatedAt time.Time
	DiedAt    time.Time
	Attempts  int
	LastError string
}

// Stats describes one endpoint's deliveries.
type Stats struct {
	Pending       int
	DeadLetters   int
	OldestPending time.Time // zero when nothing is pending
}

// Event is what a change writes: the body announcing it, once per
// subscribed endpoint.
type Event struct {
	Body        []byte
	TraceParent string
}

// Row is one event for one endpoint, as a change's commit writes it. A
// Leased row is written claimed by its writer, which attempts it at once;
// only a store that claims as it writes (see Planner) writes one so.
type Row struct {
	ID       string       // the webhook-id: NewID()
	Plant    int64        // the plant whose change the event announces
	Kind     changes.Kind // the change's
	Endpoint string
	Event    Event
	Leased   bool
}

// Delivery is the leased row's first attempt, in the commit c.
func (r Row) Delivery(c changes.Committed) Delivery {
	return Delivery{ID: r.ID, Endpoint: r.Endpoint, Kind: r.Kind, Version: c.Version, Body: r.Event.Body,
		TraceParent: r.Event.TraceParent, CreatedAt: c.At, Attempt: 1}
}

// Outbox is where deliveries wait, with the record of their attempts.
type Outbox interface {
	Attempts
	// Claim leases at most max of endpoint's deliveries that are due. A
	// claimed delivery is not claimed again until it is settled or lease
	// has passed (its sender may have died). Each claim is an attempt.
	Claim(ctx context.Context, endpoint string, max int, lease time.Duration) ([]Delivery, error)
	// Delivered settles ds: their endpoints have them. They are no longer
	// attempted, and are kept (for Replay) until Prune removes them. One
	// call settles many, so that a busy sender does not pay a commit per
	// event.
	Delivered(ctx context.Context, ds []Delivery) error
	// Retry makes d due again after the given wait, recording why its
	// attempt failed. A sender whose lease passed and whose delivery was
	// claimed again changes nothing.
	Retry(ctx context.Context, d Delivery, after time.Duration, reason string) error
	// Bury makes d a dead letter: kept, no longer attempted.
	Bury(ctx context.Context, d Delivery, reason string) error
	// DeadLetters lists at most limit dead letters, of endpoint or of all
	// endpoints when it is "", oldest first.
	DeadLetters(ctx context.Context, endpoint string, limit int) ([]DeadLetter, error)
	// Redeliver makes the dead letter id due now, with its attempts
	// counted from zero again; ErrNotFound when there is no such dead
	// letter, a *NotConfiguredError (and the letter stays) when its
	// endpoint is not in configured: pending, it would be dropped as a
	// removed endpoint's event, and a dead letter is kept.
	Redeliver(ctx context.Context, id string, configured []string) error
	// DropExcept removes the pending deliveries of every endpoint not in
	// keep (endpoints removed from the configuration) and counts them by
	// endpoint. Dead letters stay.
	DropExcept(ctx context.Context, keep []string) (map[string]int, error)
	// Stats describes the deliveries of every endpoint that has any.
	Stats(ctx context.Context) (map[string]Stats, error)
	// Replay makes endpoint's delivered events whose change was committed
	// at or after since due again, at most limit of them, oldest first,
	// with their webhook-ids, bodies and versions as first sent, and their
	// attempts counted from zero; it returns how many it made due. An
	// event pending already, or dead, is left as it is, so a replay run
	// twice sends each event once more at most. A receiver that lost data
	// gets back what the retention window still holds.
	Replay(ctx context.Context, endpoint string, since time.Time, limit int) (int, error)
	// Prune removes the delivered events whose change was committed before
	// before (the retention window's start) and returns how many, and the
	// attempts on record made before it. Pending events and dead letters
	// are never pruned.
	Prune(ctx context.Context, before time.Time) (int, error)
}

// ErrNotFound means no dead letter has the id.
var ErrNotFound = errors.New("outbox: no such dead letter")

// NotConfiguredError refuses to redeliver a dead letter whose endpoint is
// not configured.
type NotConfiguredError struct{ Endpoint string }

func (e *NotConfiguredError) Error() string {
	return fmt.Sprintf("outbox: the dead letter's endpoint %q is not configured", e.Endpoint)
}

// idEncoding spells ids in digits and lowercase letters, URL- and
// header-safe, its alphabet in ASCII order so that the text sorts as the
// bytes do.
var idEncoding = base32.NewEncoding("234567abcdefghijklmnopqrstuvwxyz").WithPadding(base32.NoPadding)

// NewID returns a new webhook-id: "msg_" and 128 bits, the shape Standard
// Webhooks' examples use: the time in milliseconds (48 bits) then 80
// random bits. Random rather than derived from the plant: a plant deleted
// and created again is a new event. Time first, as KSUIDs and UUIDv7 do,
// so that ids made one after another sort one after another: a new row's
// key lands at the end of the postgres outbox's primary key index rather
// than on a random page of it, which on a busy create path is the
// difference between appending to one hot page and dirtying a page per
// event.
func NewID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16) //nolint:gosec // G115: a positive Unix time
	_, _ = rand.Read(b[6:])                                               // never fails (crypto/rand)
	return "msg_" + idEncoding.EncodeToString(b[:])
}
