// Package webhookstest is a real webhook receiver for tests: an HTTP
// server on loopback that verifies every request's signature with the
// Standard Webhooks library (not with the sender's own code) and answers
// as the test scripts it.
package webhookstest

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// NewSecret returns a new signing secret: "whsec_" and 32 random bytes.
func NewSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// Request is one request the receiver got.
type Request struct {
	ID, Timestamp, Signature string
	Header                   http.Header
	Body                     []byte
	// Verified is whether the signature verified (and the timestamp was
	// recent) by the Standard Webhooks library with the receiver's secret.
	Verified bool
	Status   int // what the receiver answered
	// Answer is the body it answered with (AnswerBody's), so that a test
	// can match the sender's record of the attempt to this request.
	Answer string
	// N is the request's number among those with its webhook-id, from 1.
	N int
}

// AnswerBody is the body the receiver answers the n-th request with
// webhook-id id with: it names the request, so that what a sender keeps
// of an answer tells which request it was. A status that allows no body
// (204, 304) has none.
func AnswerBody(id string, n, status int) string {
	if status == http.StatusNoContent || status == http.StatusNotModified {
		return ""
	}
	return fmt.Sprintf("%d to %s, request %d", status, id, n)
}

// Answer decides the status (and headers) of the n-th request (from 1)
// with a webhook-id.
type Answer func(req Request, n int) (status int, header http.Header)

// Receiver records every request and answers with its Answer (200 unless
// set).
type Receiver struct {
	URL string

	addr     string
	server   *http.Server
	verifier *standardwebhooks.Webhook
	mu       sync.Mutex
	answer   Answer
	requests []Request
	perID    map[string]int
	changed  chan struct{} // closed and replaced on every request
}

// NewReceiver starts a receiver on loopback whose requests must be signed
// with secret; it stops when the test ends.
func NewReceiver(t testing.TB, secret string) *Receiver {
	t.Helper()
	v, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{verifier: v, perID: make(map[string]int), changed: make(chan struct{}), addr: "127.0.0.1:0"}
	r.Up(t)
	r.URL = "http://" + r.addr + "/hooks/plants"
	t.Cleanup(r.Down)
	return r
}

// Up starts serving, on the address it had before if it was Down.
func (r *Receiver) Up(t testing.TB) {
	t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	r.mu.Lock()
	r.server = &http.Server{Handler: http.HandlerFunc(r.serve)}
	srv := r.server
	r.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
}

// Down stops serving: the sender's connections are refused, as they are
// by a receiver that is down, until Up.
func (r *Receiver) Down() {
	r.mu.Lock()
	srv := r.server
	r.mu.Unlock()
	_ = srv.Close()
}

// SetAnswer scripts the answers from now on.
func (r *Receiver) SetAnswer(a Answer) {
	r.mu.Lock()
	r.answer = a
	r.mu.Unlock()
}

func (r *Receiver) serve(w http.ResponseWriter, hr *http.Request) {
	body, _ := io.ReadAll(hr.Body)
	req := Request{ID: hr.Header.Get("webhook-id"), Timestamp: hr.Header.Get("webhook-timestamp"),
		Signature: hr.Header.Get("webhook-signature"), Header: hr.Header.Clone(), Body: body}
	req.Verified = r.verifier.Verify(body, hr.Header) == nil
	r.mu.Lock()
	r.perID[req.ID]++
	n, answer := r.perID[req.ID], r.answer
	r.mu.Unlock()
	status, header := http.StatusOK, http.Header(nil)
	if answer != nil {
		status, header = answer(req, n)
	}
	for k, vs := range header {
		w.Header()[k] = vs
	}
	w.WriteHeader(status)
	req.Status, req.N, req.Answer = status, n, AnswerBody(req.ID, n, status)
	_, _ = io.WriteString(w, req.Answer)
	r.mu.Lock()
	r.requests = append(r.requests, req)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// Requests is every request so far, in arrival order.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// Delivered maps each webhook-id answered 2xx to its body.
func (r *Receiver) Delivered() map[string][]byte {
	out := make(map[string][]byte)
	for _, req := range r.Requests() {
		if req.Status >= 200 && req.Status < 300 {
			out[req.ID] = req.Body
		}
	}
	return out
}

// Changed is closed at the next request.
func (r *Receiver) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}
