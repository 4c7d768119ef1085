package webhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
	"github.com/plantstore/plantstore/modules/outbox"
)

// Admin listener paths for dead letters and replays. The admin listener
// has no auth and must stay inside the cluster: redelivering and replaying
// are an operator's acts.
const (
	DeadLettersPath = "/webhooks/dead-letters"
	RedeliverPath   = "/webhooks/dead-letters/{id}/redeliver"
	ReplayPath      = "/webhooks/endpoints/{name}/replay"
)

// maxDeadLetters bounds one listing.
const maxDeadLetters = 1000

// A replay makes at most maxReplay events due per call (one bounded write
// to the outbox), defaultReplay unless its limit says otherwise.
const (
	defaultReplay = 1000
	maxReplay     = 10000
)

// replayed is a replay's answer.
type replayed struct {
	Endpoint string `json:"endpoint"`
	Replayed int    `json:"replayed"`
}

// deadLetterJSON is a dead letter as listed: which change it announced
// (its type and version, which a deletion's data alone does not say) and
// the event's data as JSON.
type deadLetterJSON struct {
	ID        string          `json:"id"`
	Endpoint  string          `json:"endpoint"`
	Type      string          `json:"type"`
	Version   int64           `json:"version"`
	CreatedAt time.Time       `json:"created_at"`
	DiedAt    time.Time       `json:"dead_lettered_at"`
	Attempts  int             `json:"attempts"`
	LastError string          `json:"last_error"`
	Event     json.RawMessage `json:"event"`
}

func listedDeadLetter(dl outbox.DeadLetter) deadLetterJSON {
	return deadLetterJSON{ID: dl.ID, Endpoint: dl.Endpoint, Type: kindOf(outbox.Delivery{Kind: dl.Kind}).String(), Version: dl.Version,
		CreatedAt: dl.CreatedAt, DiedAt: dl.DiedAt, Attempts: dl.Attempts, LastError: dl.LastError, Event: dl.Body}
}

// AdminRoutes lists and redelivers s's dead letters.
func AdminRoutes(s *Service, log *zap.Logger) []httpapi.Route {
	box := s.Outbox
	list := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuseRepeated(w, r, "limit", "endpoint") {
			return
		}
		limit := 100
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxDeadLetters || strconv.Itoa(n) != v {
				httperr.Write(w, http.StatusBadRequest, "limit must be a whole number from 1 to "+strconv.Itoa(maxDeadLetters))
				return
			}
			limit = n
		}
		dead, err := box.DeadLetters(r.Context(), r.URL.Query().Get("endpoint"), limit)
		if err != nil {
			log.Error("webhooks: listing dead letters failed", zap.Error(err))
			httperr.Write(w, http.StatusServiceUnavailable, "the outbox cannot be read")
			return
		}
		out := make([]deadLetterJSON, len(dead))
		for i, dl := range dead {
			out[i] = listedDeadLetter(dl)
		}
		body, _ := json.Marshal(out)
		httperr.SetJSONContentType(w.Header())
		_, _ = w.Write(body)
	})
	redeliver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := mux.Vars(r)["id"]
		err := s.Dispatcher.Redeliver(r.Context(), id)
		var notConfigured *outbox.NotConfiguredError
		switch {
		case errors.Is(err, outbox.ErrNotFound):
			httperr.Write(w, http.StatusNotFound, "no dead letter has this id")
		case errors.As(err, &notConfigured):
			httperr.Write(w, http.StatusConflict, fmt.Sprintf("the endpoint %q of this dead letter is not in the webhooks file; "+
				"it is kept: add the endpoint back, then redeliver", notConfigured.Endpoint))
		case err != nil:
			log.Error("webhooks: redelivering a dead letter failed", zap.String("webhook_id", id), zap.Error(err))
			httperr.Write(w, http.StatusServiceUnavailable, "the outbox cannot be written")
		default:
			log.Info("webhooks: dead letter queued for redelivery", zap.String("webhook_id", id))
			w.WriteHeader(http.StatusAccepted)
		}
	})
	return []httpapi.Route{
		{Method: http.MethodGet, Path: DeadLettersPath, Handler: list},
		{Method: http.MethodPost, Path: RedeliverPath, Handler: redeliver},
		{Method: http.MethodPost, Path: ReplayPath, Handler: replayHandler(s.Dispatcher, log)},
	}
}

// replayHandler makes an endpoint's delivered events due again: those
// committed at or after since, oldest first, at most limit. Without since,
// from the oldest the outbox still keeps (the retention window's start).
// An answer of limit events means more may be left: replay again from a
// later since, or with a higher limit.
func replayHandler(d *Dispatcher, log *zap.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuseRepeated(w, r, "since", "limit") {
			return
		}
		name := mux.Vars(r)["name"]
		q := r.URL.Query()
		var since time.Time // zero: every delivered event still kept
		if v := q.Get("since"); v != "" {
			var err error
			if since, err = time.Parse(time.RFC3339Nano, v); err != nil {
				httperr.Write(w, http.StatusBadRequest, "since must be an RFC 3339 time, such as 2026-11-25T19:00:00Z: "+
					"the events committed from then on are sent again (without since, every delivered event still kept)")
				return
			}
		}
		limit := defaultReplay
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxReplay || strconv.Itoa(n) != v {
				httperr.Write(w, http.StatusBadRequest, "limit must be a whole number from 1 to "+strconv.Itoa(maxReplay))
				return
			}
			limit = n
		}
		n, err := d.Replay(r.Context(), name, since, limit)
		var notConfigured *outbox.NotConfiguredError
		switch {
		case errors.As(err, &notConfigured):
			httperr.Write(w, http.StatusNotFound, fmt.Sprintf("no endpoint %q in the webhooks file", name))
			return
		case err != nil:
			log.Error("webhooks: replaying delivered events failed", zap.String("endpoint", name), zap.Error(err))
			httperr.Write(w, http.StatusServiceUnavailable, "the outbox cannot be written")
			return
		}
		log.Info("webhooks: delivered events replayed", zap.String("endpoint", name), zap.Time("since", since), zap.Int("events", n))
		body, _ := json.Marshal(replayed{Endpoint: name, Replayed: n})
		httperr.SetJSONContentType(w.Header())
		_, _ = w.Write(body)
	})
}

// refuseRepeated answers 400 and returns true when one of the query
// parameters named is given more than once: which one was meant is never
// guessed (the API's routes refuse them alike).
func refuseRepeated(w http.ResponseWriter, r *http.Request, names ...string) bool {
	q := r.URL.Query()
	for _, name := range names {
		if n := len(q[name]); n > 1 {
			httperr.Write(w, http.StatusBadRequest, fmt.Sprintf("query parameter %q is given %d times; give it at most once", name, n))
			return true
		}
	}
	return false
}
