package webhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
	"github.com/plantstore/plantstore/modules/outbox"
)

// API listener paths of the record of attempts, for subscribers: behind
// the API's auth, with the scope webhooks:manage.
const (
	AttemptsPath  = "/webhooks/endpoints/{id}/attempts"
	MessagePath   = "/webhooks/messages/{id}"
	ResendPath    = "/webhooks/messages/{id}/redeliver"
	attemptsLimit = 100  // a page's attempts when the request says none
	maxAttempts   = 1000 // the most a page holds
	maxMessageID  = 256  // bytes: longer is no webhook-id
)

// attemptJSON is an attempt as the API shows it. Status is absent when
// the attempt got no answer, and error then says why.
type attemptJSON struct {
	ID        string    `json:"id"`
	WebhookID string    `json:"webhook_id"`
	Endpoint  string    `json:"endpoint"`
	Attempt   int       `json:"attempt"`
	At        time.Time `json:"at"`
	Succeeded bool      `json:"succeeded"`
	Status    int       `json:"status,omitempty"`
	Error     string    `json:"error,omitempty"`
	LatencyMS float64   `json:"latency_ms"`
	Answer    string    `json:"answer"`
}

func shownAttempt(a outbox.Attempt) attemptJSON {
	return attemptJSON{ID: strconv.FormatInt(a.Seq, 10), WebhookID: a.Message, Endpoint: a.Endpoint, Attempt: a.Number,
		At: a.At.UTC(), Succeeded: a.Succeeded(), Status: a.Status, Error: a.Error,
		LatencyMS: float64(a.Latency.Microseconds()) / 1000, Answer: a.Answer}
}

// messageJSON is a message as the API shows it: one event for one
// endpoint (the same change has another webhook-id for another endpoint).
type messageJSON struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	PlantID   int64           `json:"plant_id"`
	Version   int64           `json:"version"`
	CreatedAt time.Time       `json:"created_at"`
	Endpoint  string          `json:"endpoint"`
	State     string          `json:"state"`
	Attempts  []attemptJSON   `json:"attempts"`
	Event     json.RawMessage `json:"event"`
}

func shownMessage(m outbox.Message) messageJSON {
	var data struct {
		ID int64 `json:"id"`
	}
	_ = json.Unmarshal(m.Body, &data) // the store's JSON: a plant or a deletion, both with the id
	out := messageJSON{ID: m.ID, Type: kindOf(outbox.Delivery{Kind: m.Kind}).String(), PlantID: data.ID, Version: m.Version,
		CreatedAt: m.CreatedAt.UTC(), Endpoint: m.Endpoint, State: m.State, Attempts: make([]attemptJSON, len(m.Attempts)), Event: m.Body}
	for i, a := range m.Attempts {
		out.Attempts[i] = shownAttempt(a)
	}
	return out
}

func newAttemptsAPI(s *Service, log *zap.Logger) *attemptsAPI {
	return &attemptsAPI{d: s.Dispatcher, box: s.Outbox, log: log}
}

// routes are the record's operations, each requiring webhooks:manage.
func (a *attemptsAPI) routes() []httpapi.Route {
	const scope = principal.ScopeWebhooksManage
	return []httpapi.Route{
		{Method: http.MethodGet, Path: AttemptsPath, Handler: http.HandlerFunc(a.list), Requires: scope},
		{Method: http.MethodGet, Path: MessagePath, Handler: http.HandlerFunc(a.message), Requires: scope},
		{Method: http.MethodPost, Path: ResendPath, Handler: http.HandlerFunc(a.resend), Requires: scope},
	}
}

type attemptsAPI struct {
	d   *Dispatcher
	box outbox.Outbox
	log *zap.Logger
}

// list handles GET /webhooks/endpoints/{id}/attempts: a page of the
// endpoint's attempts, newest first, and a Link to the next (older) page
// while more may remain.
func (a *attemptsAPI) list(w http.ResponseWriter, r *http.Request) {
	endpoint := mux.Vars(r)["id"]
	q, err := parseAttemptsQuery(r.URL.Query())
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	if !a.d.Configured(endpoint) {
		httperr.Write(w, http.StatusNotFound, fmt.Sprintf("no webhook endpoint %q", clipped(endpoint)))
		return
	}
	q.Endpoint = endpoint
	page := q.Limit
	q.Limit++ // the one past the page says whether another follows
	attempts, err := a.box.Attempts(r.Context(), q)
	if err != nil {
		a.log.Error("webhooks: listing attempts failed", zap.String("endpoint", endpoint), zap.Error(err))
		unavailable(w, "the record of attempts cannot be read")
		return
	}
	if len(attempts) > page {
		attempts = attempts[:page]
		w.Header().Set("Link", attemptsNext(endpoint, attempts[page-1].Seq, page, r.URL.Query().Get("status")))
	}
	out := make([]attemptJSON, len(attempts))
	for i, at := range attempts {
		out[i] = shownAttempt(at)
	}
	writeResource(w, http.StatusOK, out)
}

// parseAttemptsQuery reads status, limit and after; each at most once.
func parseAttemptsQuery(v url.Values) (outbox.AttemptQuery, error) {
	q := outbox.AttemptQuery{Limit: attemptsLimit}
	for _, name := range []string{"status", "limit", "after"} {
		if n := len(v[name]); n > 1 {
			return q, fmt.Errorf("query parameter %q is given %d times; give it at most once", name, n)
		}
	}
	if s, ok := v["status"]; ok {
		switch s[0] {
		case "succeeded":
			q.Succeeded = ptr(true)
		case "failed":
			q.Succeeded = ptr(false)
		default:
			return q, fmt.Errorf(`query parameter "status" must be succeeded or failed, not %q`, clipped(s[0]))
		}
	}
	if s, ok := v["limit"]; ok {
		n, err := strconv.Atoi(s[0])
		if err != nil || n < 1 || n > maxAttempts || strconv.Itoa(n) != s[0] {
			return q, fmt.Errorf(`query parameter "limit" must be a whole number from 1 to %d, not %q`, maxAttempts, clipped(s[0]))
		}
		q.Limit = n
	}
	if s, ok := v["after"]; ok {
		n, err := strconv.ParseInt(s[0], 10, 64)
		if err != nil || n < 1 || strconv.FormatInt(n, 10) != s[0] {
			return q, fmt.Errorf(`query parameter "after" must be an attempt's id (a positive whole number), not %q`, clipped(s[0]))
		}
		q.Before = n
	}
	return q, nil
}

func ptr[T any](v T) *T { return &v }

// attemptsNext is the Link to the page after the attempt last, with the
// request's limit and status.
func attemptsNext(endpoint string, last int64, limit int, status string) string {
	link := "</webhooks/endpoints/" + url.PathEscape(endpoint) + "/attempts?after=" + strconv.FormatInt(last, 10) +
		"&limit=" + strconv.Itoa(limit)
	if status != "" {
		link += "&status=" + url.QueryEscape(status)
	}
	return link + `>; rel="next"`
}

// message handles GET /webhooks/messages/{id}.
func (a *attemptsAPI) message(w http.ResponseWriter, r *http.Request) {
	id, ok := messageID(w, r)
	if !ok {
		return
	}
	m, err := a.box.Message(r.Context(), id)
	if a.failed(w, id, err) {
		return
	}
	writeResource(w, http.StatusOK, shownMessage(m))
}

// resend handles POST /webhooks/messages/{id}/redeliver: the message is
// made due now, whatever its state, and 202 answers it as the resend left
// it (pending, with the attempts on record before); the attempt follows
// at once, and shows in its attempts.
func (a *attemptsAPI) resend(w http.ResponseWriter, r *http.Request) {
	id, ok := messageID(w, r)
	if !ok {
		return
	}
	v := r.URL.Query()
	if n := len(v["endpoint"]); n > 1 {
		httperr.Write(w, http.StatusBadRequest, fmt.Sprintf("query parameter %q is given %d times; give it at most once", "endpoint", n))
		return
	}
	m, err := a.box.Message(r.Context(), id)
	if a.failed(w, id, err) {
		return
	}
	if ep, ok := v["endpoint"]; ok && ep[0] != m.Endpoint {
		httperr.Write(w, http.StatusNotFound, fmt.Sprintf("the message %q is not for the endpoint %q: a webhook-id names one endpoint's event", clipped(id), clipped(ep[0])))
		return
	}
	err = a.d.Resend(r.Context(), id, m.Endpoint)
	var notConfigured *outbox.NotConfiguredError
	if errors.As(err, &notConfigured) {
		httperr.Write(w, http.StatusConflict, fmt.Sprintf("the endpoint %q of this message is neither in the webhooks file nor made through the API; "+
			"the message is kept: redeliver it once the endpoint is back", notConfigured.Endpoint))
		return
	}
	if a.failed(w, id, err) {
		return
	}
	a.log.Info("webhooks: message queued for redelivery", zap.String("webhook_id", id), zap.String("endpoint", m.Endpoint))
	m.State = outbox.StatePending // as the resend left it; its attempts follow
	writeResource(w, http.StatusAccepted, shownMessage(m))
}

// failed answers err, if any: 404 for a message that is not on record,
// 503 when the outbox cannot be used.
func (a *attemptsAPI) failed(w http.ResponseWriter, id string, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, outbox.ErrNoMessage):
		httperr.Write(w, http.StatusNotFound, fmt.Sprintf("no message has the webhook-id %q (or it is past the retention)", clipped(id)))
	default:
		a.log.Error("webhooks: reading a message failed", zap.String("webhook_id", id), zap.Error(err))
		unavailable(w, "the outbox cannot be used")
	}
	return true
}

// unavailable answers 503 with a Retry-After, as every API route does
// when the store cannot be used.
func unavailable(w http.ResponseWriter, message string) {
	w.Header().Set("Retry-After", "1")
	httperr.Write(w, http.StatusServiceUnavailable, message)
}

// messageID is the path's webhook-id, refused with 400 when it cannot be
// one: longer than maxMessageID, not valid UTF-8, or holding U+0000.
func messageID(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := mux.Vars(r)["id"]
	if len(id) > maxMessageID || !utf8.ValidString(id) || strings.ContainsRune(id, 0) {
		httperr.Write(w, http.StatusBadRequest, fmt.Sprintf("the webhook-id must be valid text of at most %d bytes", maxMessageID))
		return "", false
	}
	return id, true
}
