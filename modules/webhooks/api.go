package webhooks

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gorilla/mux"
	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/endpointstore"
	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
	"github.com/plantstore/plantstore/modules/outbox"
	"github.com/plantstore/plantstore/modules/plants/plant"
)

// The endpoints as resources of the API listener (--webhooks-api), under
// the scope webhooks:manage: the API's are made, changed, rotated and
// removed here and kept in the store; the file's are shown, read-only.
const (
	EndpointsPath = "/webhooks/endpoints"
	EndpointPath  = "/webhooks/endpoints/{id}"
	RotatePath    = "/webhooks/endpoints/{id}/rotate"
)

// Bounds of what the API accepts.
const (
	maxEndpointBody     = 64 << 10
	maxURLBytes         = 2048
	maxDescriptionBytes = 256
	// maxAPIEndpoints bounds the API's endpoints: each costs every
	// replica a loop and its attempts.
	maxAPIEndpoints = 256
	// maxSecrets bounds an endpoint's secrets in a rotation's overlap:
	// each signs every request.
	maxSecrets = 4
	// defaultOverlap and maxOverlap bound how long a rotated secret keeps
	// signing.
	defaultOverlap = 24 * time.Hour
	maxOverlap     = 7 * 24 * time.Hour

	defaultEndpointsLimit = 100
	maxEndpointsLimit     = 1000
	maxConditionalWrites  = 8
)

// Sources of an endpoint, its "source" field.
const (
	sourceAPI  = "api"
	sourceFile = "file"
)

// endpointJSON is an endpoint as the API shows it: never a secret, but
// each secret's fingerprint; Secret only in the answer that made it.
type endpointJSON struct {
	ID             string       `json:"id"`
	Source         string       `json:"source"`
	URL            string       `json:"url"`
	Description    string       `json:"description,omitempty"`
	Format         Format       `json:"format"`
	Events         []string     `json:"events"`
	Enabled        bool         `json:"enabled"`
	DisabledReason string       `json:"disabled_reason,omitempty"`
	Secrets        []secretJSON `json:"secrets"`
	CreatedAt      *time.Time   `json:"created_at,omitempty"`
	UpdatedAt      *time.Time   `json:"updated_at,omitempty"`
	// Secret is the new secret, in the answers of a create and a
	// rotation only.
	Secret string `json:"secret,omitempty"`
}

// secretJSON is a secret as the API shows it.
type secretJSON struct {
	Fingerprint string     `json:"fingerprint"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
}

// fingerprint names a secret without revealing it: the first 8 bytes of
// the SHA-256 of its key. A key is at least 24 random bytes, so the
// fingerprint cannot be turned back into it.
func fingerprint(key []byte) string {
	sum := sha256.Sum256(key)
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// subscribedEvents is every event ep gets.
func subscribedEvents(ep Endpoint) []string {
	out := []string{}
	for _, ev := range Events {
		if ep.Subscribes(ev) {
			out = append(out, ev)
		}
	}
	return out
}

func fileResource(ep Endpoint) endpointJSON {
	out := endpointJSON{ID: ep.Name, Source: sourceFile, URL: ep.URL, Format: ep.Format, Events: subscribedEvents(ep), Enabled: true}
	for _, s := range ep.Secrets {
		out.Secrets = append(out.Secrets, secretJSON{Fingerprint: fingerprint(s.key)})
	}
	return out
}

func apiResource(stored endpointstore.Endpoint) endpointJSON {
	ep, _ := runnable(stored) // it was checked when written
	created, updated := stored.CreatedAt.UTC(), stored.UpdatedAt.UTC()
	out := endpointJSON{ID: stored.ID, Source: sourceAPI, URL: stored.URL, Description: stored.Description, Format: ep.Format,
		Events: subscribedEvents(ep), Enabled: stored.Enabled, DisabledReason: stored.DisabledReason,
		Secrets: []secretJSON{}, CreatedAt: &created, UpdatedAt: &updated}
	now := time.Now()
	for _, s := range ep.Secrets {
		if !s.active(now) {
			continue
		}
		sj := secretJSON{Fingerprint: fingerprint(s.key)}
		if !s.notAfter.IsZero() {
			at := s.notAfter.UTC()
			sj.ExpiresAt = &at
		}
		out.Secrets = append(out.Secrets, sj)
	}
	return out
}

// etag is the resource's strong ETag: a digest of what it shows.
func (e endpointJSON) etag() string {
	e.Secret = ""
	sum := sha256.Sum256(marshal(e))
	return `"` + base64.RawURLEncoding.EncodeToString(sum[:16]) + `"`
}

// EndpointsAPI serves the endpoints under /webhooks/endpoints.
type EndpointsAPI struct {
	store endpointstore.Store
	d     *Dispatcher
	cfg   Config
	log   *zap.Logger
}

// NewEndpointsAPI serves the endpoints of store (and d's file's,
// read-only); d follows what it writes.
func NewEndpointsAPI(store endpointstore.Store, d *Dispatcher, cfg Config, log *zap.Logger) *EndpointsAPI {
	return &EndpointsAPI{store: store, d: d, cfg: cfg, log: log}
}

// Routes are the endpoints' operations, each requiring webhooks:manage.
func (a *EndpointsAPI) Routes() []httpapi.Route {
	const scope = principal.ScopeWebhooksManage
	body := func(h http.HandlerFunc) http.Handler { return httpapi.ReadsBody(maxEndpointBody, h) }
	return []httpapi.Route{
		{Method: http.MethodGet, Path: EndpointsPath, Handler: http.HandlerFunc(a.list), Requires: scope},
		{Method: http.MethodPost, Path: EndpointsPath, Handler: body(a.create), Requires: scope},
		{Method: http.MethodGet, Path: EndpointPath, Handler: http.HandlerFunc(a.get), Requires: scope},
		{Method: http.MethodPatch, Path: EndpointPath, Handler: body(a.patch), Requires: scope},
		{Method: http.MethodDelete, Path: EndpointPath, Handler: http.HandlerFunc(a.delete), Requires: scope},
		{Method: http.MethodPost, Path: RotatePath, Handler: body(a.rotate), Requires: scope},
	}
}

// APIRoutes are the webhooks' routes on the API listener, each requiring
// webhooks:manage: the record of attempts, the messages and their
// redelivery whenever webhooks run (they change no endpoint, and the
// file's endpoints have attempts too), and the endpoints' own operations
// with --webhooks-api.
func APIRoutes(s *Service, log *zap.Logger) []httpapi.Route {
	if !s.On() {
		return nil
	}
	routes := newAttemptsAPI(s, log).routes()
	if s.Endpoints != nil {
		routes = append(routes, s.Endpoints.Routes()...)
	}
	return routes
}

// fileEndpoint returns the file's endpoint named id.
func (a *EndpointsAPI) fileEndpoint(id string) (Endpoint, bool) {
	for _, ep := range *a.d.listed.Load() {
		if !ep.API && ep.Name == id {
			return ep, true
		}
	}
	return Endpoint{}, false
}

// list handles GET /webhooks/endpoints: a page of the file's and the
// API's endpoints in ascending id order, with a Link to the next page
// while more remain.
func (a *EndpointsAPI) list(w http.ResponseWriter, r *http.Request) {
	after, limit, err := parseEndpointsQuery(r.URL.RawQuery)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	stored, err := a.store.ListEndpoints(r.Context(), after, limit+1)
	if err != nil {
		a.storeError(w, r, err)
		return
	}
	page := make([]endpointJSON, 0, len(stored))
	for _, s := range stored {
		page = append(page, apiResource(s))
	}
	for _, ep := range *a.d.listed.Load() {
		if !ep.API && ep.Name > after {
			page = append(page, fileResource(ep))
		}
	}
	slices.SortFunc(page, func(x, y endpointJSON) int { return strings.Compare(x.ID, y.ID) })
	if len(page) > limit {
		page = page[:limit]
		w.Header().Set("Link", "</webhooks/endpoints?after="+url.QueryEscape(page[limit-1].ID)+"&limit="+strconv.Itoa(limit)+`>; rel="next"`)
	}
	writeResource(w, http.StatusOK, page)
}

// parseEndpointsQuery reads after and limit: each at most once, limit in
// canonical decimal from 1 to maxEndpointsLimit, after an id's characters.
func parseEndpointsQuery(raw string) (after string, limit int, err error) {
	limit = defaultEndpointsLimit
	values, err := url.ParseQuery(raw)
	if err != nil {
		return "", 0, errors.New("the query string is malformed")
	}
	for _, name := range []string{"after", "limit"} {
		if n := len(values[name]); n > 1 {
			return "", 0, fmt.Errorf("query parameter %q is given %d times; give it at most once", name, n)
		}
	}
	if v, ok := values["limit"]; ok {
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > maxEndpointsLimit || strconv.Itoa(n) != v[0] {
			return "", 0, fmt.Errorf(`query parameter "limit" must be an integer from 1 to %d`, maxEndpointsLimit)
		}
		limit = n
	}
	if v, ok := values["after"]; ok {
		if !validID(v[0]) {
			return "", 0, errors.New(`query parameter "after" must be an endpoint's id`)
		}
		after = v[0]
	}
	return after, limit, nil
}

// validID reports whether id can name an endpoint: a file's name or an
// API's id (both are namePattern's).
func validID(id string) bool { return namePattern.MatchString(id) }

// get handles GET /webhooks/endpoints/{id}.
func (a *EndpointsAPI) get(w http.ResponseWriter, r *http.Request) {
	id, pc, ok := a.open(w, r)
	if !ok {
		return
	}
	res, _, found, err := a.read(r.Context(), id)
	if err != nil {
		a.storeError(w, r, err)
		return
	}
	if !found {
		a.notFound(w, id)
		return
	}
	if v := pc.evaluate(id, &res, true); v.status != 0 {
		v.answer(w, &res)
		return
	}
	w.Header().Set("ETag", res.etag())
	writeResource(w, http.StatusOK, res)
}

// read reads the endpoint id, the file's or the API's (stored is the
// API's as stored; found is false for none).
func (a *EndpointsAPI) read(ctx context.Context, id string) (res endpointJSON, stored endpointstore.Endpoint, found bool, err error) {
	if ep, ok := a.fileEndpoint(id); ok {
		return fileResource(ep), endpointstore.Endpoint{}, true, nil
	}
	stored, err = a.store.GetEndpoint(ctx, id)
	if errors.Is(err, endpointstore.ErrNotFound) {
		return endpointJSON{}, stored, false, nil
	}
	if err != nil {
		return endpointJSON{}, stored, false, err
	}
	return apiResource(stored), stored, true, nil
}

// createRequest is a create's body; every field but url may be left out.
type createRequest struct {
	URL         *string  `json:"url"`
	Description *string  `json:"description"`
	Format      *Format  `json:"format"`
	Events      []string `json:"events"`
	Enabled     *bool    `json:"enabled"`
}

const createFields = "url, description, format, events and enabled"

// create handles POST /webhooks/endpoints: a new endpoint with a new
// secret, answered 201 with its Location, and the secret, once.
func (a *EndpointsAPI) create(w http.ResponseWriter, r *http.Request) {
	doc, ok := a.body(w, r, false)
	if !ok {
		return
	}
	var req createRequest
	if err := decodeObject(doc, &req, createFields); err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.URL == nil {
		httperr.Write(w, http.StatusBadRequest, "url: required, the https URL events are sent to")
		return
	}
	now := time.Now().UTC()
	ep := endpointstore.Endpoint{ID: apiIDPrefix + newEndpointID(), URL: *req.URL, Format: string(FormatOrigin), Events: req.Events,
		Enabled: true, CreatedAt: now, UpdatedAt: now}
	if req.Description != nil {
		ep.Description = *req.Description
	}
	if req.Format != nil {
		ep.Format = string(*req.Format)
	}
	if req.Enabled != nil {
		ep.Enabled = *req.Enabled
	}
	if err := a.check(ep, req.Events != nil); err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	a.d.applyMu.Lock()
	count := len(a.d.api)
	a.d.applyMu.Unlock()
	if count >= maxAPIEndpoints {
		httperr.Write(w, http.StatusConflict, fmt.Sprintf("there are %d endpoints made through the API already, the most there may be; delete one first", count))
		return
	}
	secret := newSecret()
	ep.Secrets = []endpointstore.Secret{{Value: secret}}
	stored, err := a.store.PutEndpoint(r.Context(), ep, 0)
	if err != nil {
		a.storeError(w, r, err)
		return
	}
	a.d.endpointsChanged(r.Context())
	a.log.Info("webhook endpoint created", zap.String("endpoint", stored.ID))
	res := apiResource(stored)
	w.Header().Set("Location", EndpointsPath+"/"+stored.ID)
	w.Header().Set("ETag", res.etag())
	res.Secret = secret
	writeResource(w, http.StatusCreated, res)
}

// check reports what is wrong with ep's fields, in the words of the API;
// explicitEvents says the request listed its events.
func (a *EndpointsAPI) check(ep endpointstore.Endpoint, explicitEvents bool) error {
	if len(ep.URL) > maxURLBytes {
		return fmt.Errorf("url: at most %d bytes, not %d", maxURLBytes, len(ep.URL))
	}
	if err := checkURL(ep.URL, a.cfg.AllowHTTP); err != nil {
		return fmt.Errorf("url: %w", err)
	}
	if !a.cfg.AllowPrivate {
		if err := checkPublicHost(ep.URL); err != nil {
			return fmt.Errorf("url: %w", err)
		}
	}
	if len(ep.Description) > maxDescriptionBytes {
		return fmt.Errorf("description: at most %d bytes, not %d", maxDescriptionBytes, len(ep.Description))
	}
	if !utf8.ValidString(ep.Description) || strings.ContainsFunc(ep.Description, unicode.IsControl) {
		return errors.New("description: must be text without control characters")
	}
	format := Format(ep.Format)
	if !slices.Contains(Formats, format) {
		return fmt.Errorf("format: %q is not a format (origin, envelope)", clipped(ep.Format))
	}
	if explicitEvents && len(ep.Events) == 0 {
		return errors.New("events: list at least one, or leave events out for every event of the format")
	}
	for i, ev := range ep.Events {
		switch {
		case !slices.Contains(Events, ev):
			return fmt.Errorf("events: %q is not an event (%s)", clipped(ev), strings.Join(Events, ", "))
		case slices.Contains(ep.Events[:i], ev):
			return fmt.Errorf("events: %q is listed twice", ev)
		case format == FormatOrigin && ev != EventPlantCreated:
			return fmt.Errorf("events: %q is sent in envelopes only: set \"format\": \"envelope\" "+
				"(the origin format's body is the created plant, for plant.created alone)", ev)
		}
	}
	return nil
}

// checkPublicHost refuses a URL whose host is an internal address
// written out (or localhost), as the sender's guard would refuse every
// attempt to it; a name is checked at every dial, after it resolves.
func checkPublicHost(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("not a URL")
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return errors.New("localhost is an internal destination (--webhooks-allow-private allows it, for development)")
	}
	if addr, err := netip.ParseAddr(host); err == nil { // not a name
		if why := internal(addr); why != "" {
			return fmt.Errorf("%s is %s, an internal destination (--webhooks-allow-private allows it, for development)", addr, why)
		}
	}
	return nil
}

// clipped is s cut to 64 bytes, for a message that quotes what a client
// sent.
func clipped(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= 64 {
		return s
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// patchRequest is a PATCH's body, a JSON merge patch (RFC 7396): a field
// left out keeps its value, null resets description and events.
type patchRequest struct {
	URL         json.RawMessage `json:"url"`
	Description json.RawMessage `json:"description"`
	Format      json.RawMessage `json:"format"`
	Events      json.RawMessage `json:"events"`
	Enabled     json.RawMessage `json:"enabled"`
}

// patch handles PATCH /webhooks/endpoints/{id}: url, description,
// events, format and enabled, as a JSON merge patch. Enabling clears the
// reason it was disabled, and it resumes where it stopped: its events
// waited.
func (a *EndpointsAPI) patch(w http.ResponseWriter, r *http.Request) {
	id, pc, ok := a.open(w, r)
	if !ok {
		return
	}
	doc, ok := a.body(w, r, true)
	if !ok {
		return
	}
	var req patchRequest
	if err := decodeObject(doc, &req, createFields); err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return
	}
	a.write(w, r, id, pc, "changed", func(ep *endpointstore.Endpoint) (int, error) {
		explicitEvents := false
		for _, f := range []struct {
			name string
			raw  json.RawMessage
			set  func(null bool) error
		}{
			{"url", req.URL, func(null bool) error { return setString(&ep.URL, req.URL, null, false) }},
			{"description", req.Description, func(null bool) error { return setString(&ep.Description, req.Description, null, true) }},
			{"format", req.Format, func(null bool) error { return setString(&ep.Format, req.Format, null, false) }},
			{"events", req.Events, func(null bool) error {
				explicitEvents = !null
				ep.Events = nil
				if null {
					return nil
				}
				return json.Unmarshal(req.Events, &ep.Events)
			}},
			{"enabled", req.Enabled, func(null bool) error {
				if null {
					return errors.New("null")
				}
				return json.Unmarshal(req.Enabled, &ep.Enabled)
			}},
		} {
			if f.raw == nil {
				continue
			}
			if err := f.set(string(f.raw) == "null"); err != nil {
				return http.StatusBadRequest, fmt.Errorf("%s: %s", f.name, fieldTypes[f.name])
			}
		}
		if ep.Enabled {
			ep.DisabledReason = ""
		}
		if err := a.check(*ep, explicitEvents); err != nil {
			return http.StatusBadRequest, err
		}
		return 0, nil
	})
}

// fieldTypes says what each field of a body must be.
var fieldTypes = map[string]string{
	"url": "must be text", "description": "must be text, or null for none", "format": "must be text",
	"events": "must be a list of events, or null for every event of the format", "enabled": "must be true or false",
	"overlap": `must be a duration such as "24h"`,
}

// setString sets *dst from raw: null clears it when nullable.
func setString(dst *string, raw json.RawMessage, null, nullable bool) error {
	if null {
		if !nullable {
			return errors.New("null")
		}
		*dst = ""
		return nil
	}
	return json.Unmarshal(raw, dst)
}

// rotateRequest is a rotation's body, which may be left out.
type rotateRequest struct {
	Overlap *string `json:"overlap"`
}

// rotate handles POST /webhooks/endpoints/{id}/rotate: a new secret,
// answered once, signs from now on; the current ones keep signing for the
// overlap (24h unless the body says), then are dropped.
func (a *EndpointsAPI) rotate(w http.ResponseWriter, r *http.Request) {
	id, pc, ok := a.open(w, r)
	if !ok {
		return
	}
	overlap := defaultOverlap
	if r.ContentLength != 0 {
		doc, ok := a.body(w, r, false)
		if !ok {
			return
		}
		var req rotateRequest
		if err := decodeObject(doc, &req, "overlap"); err != nil {
			httperr.Write(w, http.StatusBadRequest, err.Error())
			return
		}
		if req.Overlap != nil {
			d, err := time.ParseDuration(*req.Overlap)
			if err != nil || d < 0 || d > maxOverlap {
				httperr.Write(w, http.StatusBadRequest, fmt.Sprintf("overlap: a duration from 0s to %v, such as \"24h\"", maxOverlap))
				return
			}
			overlap = d
		}
	}
	secret := newSecret()
	a.write(w, r, id, pc, "secret rotated", func(ep *endpointstore.Endpoint) (int, error) {
		until := time.Now().UTC().Add(overlap)
		rotated := []endpointstore.Secret{{Value: secret}}
		for _, s := range ep.Secrets {
			if overlap == 0 {
				break
			}
			if s.NotAfter.IsZero() || s.NotAfter.After(until) {
				s.NotAfter = until
			}
			rotated = append(rotated, s)
		}
		if len(rotated) > maxSecrets {
			return http.StatusConflict, fmt.Errorf("the endpoint has %d secrets signing already, the most there may be; "+
				"wait for a rotation's overlap to end, or rotate with \"overlap\": \"0s\" to drop the others now", len(ep.Secrets))
		}
		ep.Secrets = rotated
		return 0, nil
	}, func(res *endpointJSON) { res.Secret = secret })
}

// delete handles DELETE /webhooks/endpoints/{id}: 204; its pending
// events are dropped, its dead letters kept.
func (a *EndpointsAPI) delete(w http.ResponseWriter, r *http.Request) {
	id, pc, ok := a.open(w, r)
	if !ok {
		return
	}
	if a.refuseFile(w, id) {
		return
	}
	for range maxConditionalWrites {
		stored, ok := a.readToWrite(w, r, id, pc)
		if !ok {
			return
		}
		err := a.store.DeleteEndpoint(r.Context(), id, stored.Revision)
		switch {
		case errors.Is(err, endpointstore.ErrRevision):
			continue
		case errors.Is(err, endpointstore.ErrNotFound):
			a.notFound(w, id)
			return
		case err != nil:
			a.storeError(w, r, err)
			return
		}
		a.d.endpointsChanged(r.Context())
		a.log.Info("webhook endpoint deleted", zap.String("endpoint", id))
		w.WriteHeader(http.StatusNoContent)
		return
	}
	a.busy(w, id)
}

// write changes the API's endpoint id by change under the preconditions
// pc, on the endpoint as stored (read again when another write came
// first), and answers it as stored; change's status, when not 0, answers
// its error instead. shown adjusts the answer (a rotation adds its
// secret).
func (a *EndpointsAPI) write(w http.ResponseWriter, r *http.Request, id string, pc preconditions, done string,
	change func(*endpointstore.Endpoint) (int, error), shown ...func(*endpointJSON)) {
	if a.refuseFile(w, id) {
		return
	}
	for range maxConditionalWrites {
		stored, ok := a.readToWrite(w, r, id, pc)
		if !ok {
			return
		}
		expect := stored.Revision
		if status, err := change(&stored); status != 0 {
			httperr.Write(w, status, err.Error())
			return
		}
		stored.UpdatedAt = time.Now().UTC()
		stored.Secrets = activeSecrets(stored.Secrets, stored.UpdatedAt)
		stored, err := a.store.PutEndpoint(r.Context(), stored, expect)
		if errors.Is(err, endpointstore.ErrRevision) {
			continue
		}
		if err != nil {
			a.storeError(w, r, err)
			return
		}
		a.d.endpointsChanged(r.Context())
		a.log.Info("webhook endpoint "+done, zap.String("endpoint", id))
		res := apiResource(stored)
		w.Header().Set("ETag", res.etag())
		for _, f := range shown {
			f(&res)
		}
		writeResource(w, http.StatusOK, res)
		return
	}
	a.busy(w, id)
}

// readToWrite reads the API's endpoint id as stored, for a write under
// the preconditions pc: it answers the request itself (a store error, a
// failed precondition, 404) and returns false when the write must not go on.
func (a *EndpointsAPI) readToWrite(w http.ResponseWriter, r *http.Request, id string, pc preconditions) (endpointstore.Endpoint, bool) {
	res, stored, found, err := a.read(r.Context(), id)
	if err != nil {
		a.storeError(w, r, err)
		return stored, false
	}
	var current *endpointJSON
	if found {
		current = &res
	}
	if v := pc.evaluate(id, current, false); v.status != 0 {
		v.answer(w, current)
		return stored, false
	}
	if !found {
		a.notFound(w, id)
		return stored, false
	}
	return stored, true
}

// refuseFile answers 409 for a write to the file's endpoint id.
func (a *EndpointsAPI) refuseFile(w http.ResponseWriter, id string) bool {
	if _, ok := a.fileEndpoint(id); !ok {
		return false
	}
	httperr.Write(w, http.StatusConflict, fmt.Sprintf("the endpoint %q comes from the webhooks file, read-only through the API: change the file", id))
	return true
}

func (a *EndpointsAPI) notFound(w http.ResponseWriter, id string) {
	httperr.Write(w, http.StatusNotFound, fmt.Sprintf("no webhook endpoint %q", id))
}

// busy answers a write that lost its race to others every time.
func (a *EndpointsAPI) busy(w http.ResponseWriter, id string) {
	unavailable(w, fmt.Sprintf("the endpoint %q changed under every attempt to write it; retry", id))
}

// open reads what every /webhooks/endpoints/{id} operation starts with:
// the id and the preconditions; a bad one is answered 400 here.
func (a *EndpointsAPI) open(w http.ResponseWriter, r *http.Request) (string, preconditions, bool) {
	id := mux.Vars(r)["id"]
	if !validID(id) {
		httperr.Write(w, http.StatusNotFound, "no webhook endpoint has this id")
		return "", preconditions{}, false
	}
	pc, err := parsePreconditions(r)
	if err != nil {
		httperr.Write(w, http.StatusBadRequest, err.Error())
		return "", preconditions{}, false
	}
	return id, pc, true
}

// body returns the request's JSON body: 415 for another Content-Type
// (a PATCH may say application/merge-patch+json), 413 over the limit.
func (a *EndpointsAPI) body(w http.ResponseWriter, r *http.Request, mergePatch bool) ([]byte, bool) {
	values := r.Header.Values("Content-Type")
	media := ""
	if len(values) == 1 {
		media, _, _ = mime.ParseMediaType(values[0])
	}
	if media != "application/json" && (!mergePatch || media != "application/merge-patch+json") {
		want := "application/json"
		if mergePatch {
			want += " or application/merge-patch+json"
		}
		httperr.Write(w, http.StatusUnsupportedMediaType, "Content-Type must be "+want)
		return nil, false
	}
	var buf bytes.Buffer
	doc, err := httpapi.ReadBody(w, r, &buf, maxEndpointBody)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		httperr.WriteBodyTooLarge(w, maxEndpointBody)
		return nil, false
	case err != nil:
		httperr.Write(w, http.StatusBadRequest, "the body could not be read")
		return nil, false
	}
	return doc, true
}

// decodeObject decodes one JSON object into v, refusing a field v lacks
// (fields lists those it has), a value of the wrong type, and anything
// after the object.
func decodeObject(doc []byte, v any, fields string) error {
	if !utf8.Valid(doc) {
		return errors.New("the body must be UTF-8 JSON")
	}
	if trimmed := bytes.TrimSpace(doc); len(trimmed) == 0 || trimmed[0] != '{' {
		return errors.New("the body must be one JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) || errors.Is(err, io.EOF) || strings.HasPrefix(err.Error(), "unexpected EOF") {
			return errors.New("the body must be one JSON object")
		}
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && fieldTypes[typeErr.Field] != "" {
			return fmt.Errorf("%s: %s", typeErr.Field, fieldTypes[typeErr.Field])
		}
		return errors.New(syntaxError(err, fields))
	}
	if _, err := dec.Token(); err == nil || !errors.Is(err, io.EOF) {
		return errors.New("the body must be one JSON object, with nothing after it")
	}
	return nil
}

// storeError answers a failed store call: 503 while the store is
// unreachable, else 500 with the detail in the log only.
func (a *EndpointsAPI) storeError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case r.Context().Err() != nil:
		httperr.Write(w, 499, "the client closed the request")
	case errors.Is(err, plant.ErrUnavailable):
		a.log.Warn("webhooks: store unavailable", zap.Error(err), zap.String("route", httpapi.RouteTemplate(r.Context())))
		w.Header().Set("Retry-After", "1")
		httperr.Write(w, http.StatusServiceUnavailable, "the store is unavailable; retry later")
	default:
		a.log.Error("webhooks: store failed", zap.Error(err), zap.String("route", httpapi.RouteTemplate(r.Context())))
		httperr.Write(w, http.StatusInternalServerError, "internal error")
	}
}

func writeResource(w http.ResponseWriter, status int, v any) {
	httperr.SetJSONContentType(w.Header())
	w.WriteHeader(status)
	_, _ = w.Write(marshal(v))
}

// newEndpointID is 26 digits and lowercase letters: the time in
// milliseconds, then 80 random bits, as the webhook-ids are made.
func newEndpointID() string {
	return strings.TrimPrefix(outbox.NewID(), "msg_")
}

// newSecret is a new signing secret: 32 random bytes.
func newSecret() string {
	var key [32]byte
	_, _ = rand.Read(key[:]) // never fails (crypto/rand)
	return "whsec_" + base64.StdEncoding.EncodeToString(key[:])
}
