package webhooks

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/plantstore/plantstore/modules/endpointstore"
)

// apiIDPrefix starts the id of every endpoint made through the API; the
// webhooks file refuses a name that starts so, so that the two never
// collide.
const apiIDPrefix = "ep_"

// apiEndpoints is the dispatcher's part of the API's endpoints: where
// they are kept, and the version of them it runs.
type apiEndpoints struct {
	store   endpointstore.Store
	version int64 // under applyMu
}

// ManagedBy has the dispatcher send to the endpoints store keeps (those
// made through the API) besides the file's, and follow their changes, on
// any replica: each asks the store whether they changed at every
// --webhooks-poll-interval (500ms by default), one small read whatever the
// number of endpoints.
func ManagedBy(store endpointstore.Store) Option {
	return func(d *Dispatcher) {
		d.endpoints = apiEndpoints{store: store}
	}
}

// endpointsChanged applies the API's endpoints now: this replica wrote
// one, and sends as written from the answer on (a rotated secret signs
// the next request). Should the read fail, the watch tries again.
func (d *Dispatcher) endpointsChanged(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	d.refreshAPI(ctx)
}

// watchAPI applies the API's endpoints each time their version moves.
func (d *Dispatcher) watchAPI() {
	defer d.loops.Done()
	tick := time.NewTicker(d.cfg.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-d.stopping:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(d.base, settleTimeout)
		d.refreshAPI(ctx)
		cancel()
	}
}

// refreshAPI reads the API's endpoints when their version moved, and
// applies them: new ones get a loop, changed ones are sent to as they now
// read (a disabled one paused, an enabled one resumed), and removed ones
// stop, their pending deliveries dropped (their dead letters kept).
func (d *Dispatcher) refreshAPI(ctx context.Context) {
	version, err := d.endpoints.store.EndpointsVersion(ctx)
	if err != nil {
		d.log.Warn("webhooks: could not read the endpoints' version; trying again", zap.Error(err))
		return
	}
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	if version == d.endpoints.version {
		return
	}
	version, api, err := d.loadAPI(ctx)
	if err != nil {
		d.log.Warn("webhooks: could not read the endpoints; trying again", zap.Error(err))
		return
	}
	old := d.api
	revisions := make(map[string]int64, len(old))
	for _, ep := range old {
		revisions[ep.Name] = ep.Revision
	}
	d.api, d.endpoints.version = api, version
	d.commit(func(ep *Endpoint) bool { return ep.API && revisions[ep.Name] != ep.Revision })
	var removed []string
	for _, ep := range old {
		if !slices.Contains(d.configured, ep.Name) {
			removed = append(removed, ep.Name)
		}
	}
	if len(removed) == 0 {
		return
	}
	// Drop the removed endpoints' deliveries, and only theirs: every
	// other endpoint that has any is kept, one of another replica this
	// one has not read yet included.
	keep := slices.Clone(d.configured)
	stats, err := d.box.Stats(ctx)
	if err == nil {
		for name := range stats {
			if !slices.Contains(removed, name) {
				keep = append(keep, name)
			}
		}
		err = d.drop(ctx, keep)
	}
	if err != nil {
		d.log.Warn("webhooks: the pending deliveries of removed endpoints were not dropped; they will be at the next start", zap.Error(err))
	}
}

// loadAPI reads every endpoint of the store, and the version it read
// them at (taken first: a write meanwhile moves it again, and the next
// refresh reads them once more).
func (d *Dispatcher) loadAPI(ctx context.Context) (int64, []Endpoint, error) {
	store := d.endpoints.store
	version, err := store.EndpointsVersion(ctx)
	if err != nil {
		return 0, nil, err
	}
	var out []Endpoint
	after := ""
	for {
		page, err := store.ListEndpoints(ctx, after, 1000)
		if err != nil {
			return 0, nil, err
		}
		for _, stored := range page {
			ep, err := runnable(stored)
			if err != nil {
				// Only the API writes the store, and it checks what it
				// writes: this is damage, or a newer build's endpoint.
				d.log.Warn("webhooks: an endpoint of the store is not sent to", zap.String("endpoint", stored.ID), zap.Error(err))
				continue
			}
			out = append(out, ep)
		}
		if len(page) < 1000 {
			return version, out, nil
		}
		after = page[len(page)-1].ID
	}
}

// runnable is a stored endpoint as the dispatcher runs it.
func runnable(stored endpointstore.Endpoint) (Endpoint, error) {
	ep := Endpoint{Name: stored.ID, URL: stored.URL, Format: Format(stored.Format), Events: stored.Events,
		API: true, Revision: stored.Revision, Disabled: !stored.Enabled}
	for i, s := range stored.Secrets {
		secret, err := ParseSecret(s.Value)
		if err != nil {
			return Endpoint{}, fmt.Errorf("secret %d: %w", i+1, err)
		}
		secret.notAfter = s.NotAfter
		ep.Secrets = append(ep.Secrets, secret)
	}
	if len(ep.Secrets) == 0 {
		return Endpoint{}, errors.New("no secret")
	}
	return ep, nil
}

// disable disables the API's endpoint name, saying why, on every replica:
// its events wait until its owner enables it again. A write that loses
// its race to another is tried again on the endpoint as it then reads.
func (d *Dispatcher) disable(name, reason string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(d.base), settleTimeout)
	defer cancel()
	for range 8 {
		stored, err := d.endpoints.store.GetEndpoint(ctx, name)
		if errors.Is(err, endpointstore.ErrNotFound) {
			return
		}
		if err != nil {
			d.log.Warn("webhooks: could not disable an endpoint", zap.String("endpoint", name), zap.Error(err))
			return
		}
		if !stored.Enabled {
			return
		}
		expect := stored.Revision
		stored.Enabled, stored.DisabledReason, stored.UpdatedAt = false, reason, time.Now().UTC()
		stored.Secrets = activeSecrets(stored.Secrets, stored.UpdatedAt)
		if _, err = d.endpoints.store.PutEndpoint(ctx, stored, expect); err == nil {
			d.log.Warn("webhook endpoint disabled: its events wait until it is enabled again", zap.String("endpoint", name), zap.String("reason", reason))
			d.endpointsChanged(ctx)
			return
		}
		if !errors.Is(err, endpointstore.ErrRevision) {
			d.log.Warn("webhooks: could not disable an endpoint", zap.String("endpoint", name), zap.Error(err))
			return
		}
	}
}

// activeSecrets is secrets without those whose overlap ended at now.
func activeSecrets(secrets []endpointstore.Secret, now time.Time) []endpointstore.Secret {
	return slices.DeleteFunc(slices.Clone(secrets), func(s endpointstore.Secret) bool { return !s.Active(now) })
}
