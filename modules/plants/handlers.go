package plants

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/changes"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
	"github.com/plantstore/plantstore/modules/plants/plant"
	"github.com/plantstore/plantstore/modules/telemetry/requestlog"
)

// DefaultMaxBodyBytes is the default request body limit, 1 MiB.
const DefaultMaxBodyBytes = 1 << 20

// Handlers serve the Plant Store API over a plant.Store.
type Handlers struct {
	store        plant.Store
	maxBodyBytes int64
	log          *zap.Logger
	created      prometheus.Counter

	changeLog changes.ChangeLog // nil: listings carry no cursor
}

// NewHandlers returns the API handlers; plants created are counted on reg.
// changeLog, unless nil, is store's: each listing page carries its head
// (Plantstore-Changes-Cursor), where a follower of the feed starts.
func NewHandlers(store plant.Store, changeLog changes.ChangeLog, maxBodyBytes int64, reg prometheus.Registerer, log *zap.Logger) (*Handlers, error) {
	created := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "plantstore_plants_created_total",
		Help: "Plants newly stored; an identical re-create stores nothing and is not counted.",
	})
	if err := reg.Register(created); err != nil {
		return nil, err
	}
	return &Handlers{store: store, maxBodyBytes: maxBodyBytes, log: log, created: created, changeLog: changeLog}, nil
}

// Routes are the API operations but the feed's (see Feed). "/plants/{id}"
// has no pattern for the id so that a malformed id reaches the handlers
// and gets a 400, not a 404; the router prefers the feed's
// "/plants/changes", a literal path, over it. Each declares its scope; a
// token listed without scopes holds both.
func (h *Handlers) Routes() []httpapi.Route {
	const read, write = principal.ScopePlantsRead, principal.ScopePlantsWrite
	return []httpapi.Route{
		{Method: http.MethodGet, Path: "/plants", Handler: http.HandlerFunc(h.list), Requires: read},
		{Method: http.MethodPost, Path: "/plants", Handler: httpapi.ReadsBody(h.maxBodyBytes, http.HandlerFunc(h.create)), Requires: write},
		{Method: http.MethodGet, Path: "/plants/{id}", Handler: http.HandlerFunc(h.get), Requires: read},
		{Method: http.MethodPut, Path: "/plants/{id}", Handler: httpapi.ReadsBody(h.maxBodyBytes, http.HandlerFunc(h.update)), Requires: write},
		{Method: http.MethodDelete, Path: "/plants/{id}", Handler: http.HandlerFunc(h.delete), Requires: write},
	}
}

// statusClientClosedRequest is nginx's status for a request whose client
// disconnected before the answer; no client ever receives it.
const statusClientClosedRequest = 499

// retryAfterSeconds is what a client is told to wait while the store is
// unreachable: long enough not to hammer it, short enough to recover fast.
const retryAfterSeconds = 1

// storeError answers a failed store call (see writeStoreError).
func (h *Handlers) storeError(w http.ResponseWriter, r *http.Request, err error, id int64) {
	writeStoreError(h.log, w, r, err, id)
}

// writeStoreError is storeError for a handler of its own (the feed's),
// logging to log: errorStatus's status and message, 503 with Retry-After;
// a failure of the store (a 500) has its detail in the log, an unreachable
// store a warning.
func writeStoreError(log *zap.Logger, w http.ResponseWriter, r *http.Request, err error, id int64) {
	status, message := errorStatus(r.Context(), err, id)
	switch status {
	case statusClientClosedRequest:
		// Nobody reads this answer, and it is not a server error, so it is
		// neither logged as one nor counted as a 5xx.
		log.Debug("client gone before the store answered", requestFields(r, err)...)
	case http.StatusServiceUnavailable:
		log.Warn("store unavailable", requestFields(r, err)...)
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	case http.StatusInternalServerError:
		log.Error("store failed", requestFields(r, err)...)
	}
	httperr.Write(w, status, message)
}

// errorStatus is the status and message of a failed store call, for a
// single request and an import's line alike: an answer (plant.IsAnswer)
// has its own 4xx (see answerStatus); a call whose client went away (ctx
// done: its connection closed) is 499, the status proxies use for it; an
// unreachable store is 503; anything else a 500 with a generic message.
func errorStatus(ctx context.Context, err error, id int64) (status int, message string) {
	if status, message, ok := answerStatus(err, id); ok {
		return status, message
	}
	switch {
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return statusClientClosedRequest, "the client closed the request"
	case errors.Is(err, plant.ErrUnavailable):
		return http.StatusServiceUnavailable, "the plant store is unavailable; retry later"
	default:
		return http.StatusInternalServerError, "internal error"
	}
}

// answerStatus maps a store's answer to its status and message; ok is false
// for a failure. Every answer of plant.Answers must have a case here (a
// test walks them), or it would be answered 500 as a failure.
func answerStatus(err error, id int64) (status int, message string, ok bool) {
	switch {
	case errors.Is(err, plant.ErrConflict):
		return http.StatusConflict, "plant " + strconv.FormatInt(id, 10) + " already exists with a different name or tag", true
	case errors.Is(err, plant.ErrNotFound):
		return http.StatusNotFound, "plant " + strconv.FormatInt(id, 10) + " not found", true
	case errors.Is(err, plant.ErrPreconditionFailed):
		return http.StatusPreconditionFailed, "plant " + strconv.FormatInt(id, 10) + " has changed: If-Match does not match its current ETag", true
	}
	return 0, "", false
}

// requestFields tie a log line to its request: the error, the route, and the
// request id and trace id that find it in the access log and the traces.
func requestFields(r *http.Request, err error) []zap.Field {
	return append(requestlog.Fields(r.Context()),
		zap.Error(err), zap.String("route", httpapi.RouteTemplate(r.Context())))
}
