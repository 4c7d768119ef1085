package outbox

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/plantstore/plantstore/modules/changes"
)

// MaxAnswerBytes bounds the answer an attempt keeps on record: its first
// bytes, enough to read a receiver's error, never its whole reply.
const MaxAnswerBytes = 1024

// Attempt is one attempt to deliver a message to its endpoint, as it is
// kept on record: written in the commit that records the delivery's state
// after it (Delivered, Retry, Bury), so that the record never tells of an
// attempt the state does not reflect, and kept for the change log's
// retention (Prune removes those made before its time).
type Attempt struct {
	// Seq is the store's order of record: a later attempt has a larger
	// one. It pages a listing (AttemptQuery's Before).
	Seq      int64
	Message  string // the webhook-id
	Endpoint string
	// Number is the delivery's attempt number, from 1; a redelivery or a
	// replay counts from 1 again.
	Number int
	At     time.Time // when the request started
	// Status is the answer's status code; 0 when there was no answer,
	// and then Error says why.
	Status int
	// Error classes an attempt without an answer (see the Error*
	// constants); "" when there was one.
	Error   string
	Latency time.Duration // from the request's start to the answer's last byte read, or to the failure
	// Answer is the answer's first bytes, at most MaxAnswerBytes, as
	// valid UTF-8 text (see AnswerText).
	Answer string
}

// The classes of an attempt that got no answer.
const (
	ErrorTimeout     = "timeout"            // no answer within the attempt's time
	ErrorRefused     = "connection_refused" // nothing listens at the address
	ErrorTLS         = "tls"                // the TLS handshake or the certificate failed
	ErrorSSRFRefused = "ssrf_refused"       // the address is internal (the sender's guard)
	ErrorInterrupted = "interrupted"        // the sender stopped during the attempt
	ErrorConnection  = "connection"         // any other failure: a reset, a DNS failure, a bad request
)

// Succeeded reports whether the endpoint took the message: a 2xx answer.
func (a Attempt) Succeeded() bool { return a.Status >= 200 && a.Status < 300 }

// AnswerText is the first bytes of an answer as the record keeps them: at
// most MaxAnswerBytes, cut at a character's boundary, with every invalid
// byte and U+0000 (which PostgreSQL's text refuses) replaced by U+FFFD.
func AnswerText(b []byte) string {
	if len(b) > MaxAnswerBytes {
		b = b[:MaxAnswerBytes]
		// A character cut in two at the end is dropped, not replaced.
		i := len(b) - 1
		for i > 0 && i > len(b)-utf8.UTFMax && !utf8.RuneStart(b[i]) {
			i--
		}
		if !utf8.FullRune(b[i:]) {
			b = b[:i]
		}
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}

// AttemptQuery selects an endpoint's attempts, newest first.
type AttemptQuery struct {
	Endpoint string
	// Succeeded, unless nil, keeps the attempts that succeeded (true) or
	// those that failed (false).
	Succeeded *bool
	// Before, unless 0, keeps the attempts whose Seq is below it: the
	// page after the one whose last attempt had that Seq.
	Before int64
	Limit  int
}

// The states of a message.
const (
	StatePending   = "pending"   // due, or waiting for its next attempt
	StateDelivered = "delivered" // its endpoint took it
	StateDead      = "dead"      // out of attempts: a dead letter
)

// Message is one event for one endpoint, whatever its state, with its
// attempts on record, oldest first.
type Message struct {
	ID        string
	Endpoint  string
	Kind      changes.Kind
	Version   int64
	Body      []byte
	CreatedAt time.Time
	State     string // StatePending, StateDelivered or StateDead
	Attempts  []Attempt
}

// ErrNoMessage means no message has the id: never written, or pruned past
// the retention.
var ErrNoMessage = errors.New("outbox: no such message")

// Attempts is the record of attempts, which every outbox keeps.
type Attempts interface {
	// Attempts lists the attempts q selects, newest first, at most
	// q.Limit.
	Attempts(ctx context.Context, q AttemptQuery) ([]Attempt, error)
	// Message returns the message id with its attempts; ErrNoMessage
	// when there is none.
	Message(ctx context.Context, id string) (Message, error)
	// Resend makes the message id due now whatever its state (pending,
	// delivered or dead), with its webhook-id, body and version as first
	// sent and its attempts counted from zero; ErrNoMessage when there is
	// none, a *NotConfiguredError (and the message stays as it is) when
	// its endpoint is not in configured.
	Resend(ctx context.Context, id string, configured []string) error
}
