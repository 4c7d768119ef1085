// Package endpointstoretest holds every endpointstore.Store to the same
// semantics: each store's tests call Run on a fresh, empty store.
package endpointstoretest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/plantstore/plantstore/modules/endpointstore"
)

// Run runs the suite on s, which must be empty; reopen, unless nil, closes
// s and opens it again on the same data (a durable store's restart) and
// returns the new one.
func Run(t *testing.T, s endpointstore.Store, reopen func(t *testing.T) endpointstore.Store) {
	t.Helper()
	ctx := context.Background()
	v0 := version(t, s)

	// A create stores the endpoint as given, at revision 1.
	a := Sample("ep_a")
	got, err := s.PutEndpoint(ctx, a, 0)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	a.Revision = 1
	same(t, "the create's answer", got, a)
	v1 := version(t, s)
	if v1 == v0 {
		t.Errorf("the version stayed %d across a create", v1)
	}
	if _, err := s.PutEndpoint(ctx, Sample("ep_a"), 0); !errors.Is(err, endpointstore.ErrRevision) {
		t.Errorf("create of a taken id: %v, want ErrRevision", err)
	}
	if version(t, s) != v1 {
		t.Errorf("a refused write changed the version")
	}
	if got, err = s.GetEndpoint(ctx, "ep_a"); err != nil {
		t.Fatalf("get: %v", err)
	}
	same(t, "the get", got, a)
	if _, err := s.GetEndpoint(ctx, "ep_none"); !errors.Is(err, endpointstore.ErrNotFound) {
		t.Errorf("get of a missing id: %v, want ErrNotFound", err)
	}

	// An update expects the revision it read.
	b := a
	b.Description = "changed"
	b.Enabled = false
	b.DisabledReason = "answered 410 Gone"
	b.Secrets = append([]endpointstore.Secret{{Value: "whsec_bmV3bmV3bmV3bmV3bmV3bmV3bmV3bmV3bmV3"}}, endpointstore.Secret{Value: a.Secrets[0].Value, NotAfter: a.UpdatedAt.Add(time.Hour)})
	if _, err := s.PutEndpoint(ctx, b, 2); !errors.Is(err, endpointstore.ErrRevision) {
		t.Errorf("update expecting revision 2 of revision 1: %v, want ErrRevision", err)
	}
	if got, err = s.PutEndpoint(ctx, b, 1); err != nil {
		t.Fatalf("update: %v", err)
	}
	b.Revision = 2
	same(t, "the update's answer", got, b)
	v2 := version(t, s)
	if v2 == v1 {
		t.Errorf("the version stayed %d across an update", v2)
	}

	// Listing pages by id.
	for _, id := range []string{"ep_c", "ep_b", "ep_d"} {
		if _, err := s.PutEndpoint(ctx, Sample(id), 0); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	if ids := list(t, s, "", 3); fmt.Sprint(ids) != "[ep_a ep_b ep_c]" {
		t.Errorf("first page: %v, want [ep_a ep_b ep_c]", ids)
	}
	if ids := list(t, s, "ep_c", 3); fmt.Sprint(ids) != "[ep_d]" {
		t.Errorf("page after ep_c: %v, want [ep_d]", ids)
	}
	if ids := list(t, s, "ep_d", 3); len(ids) != 0 {
		t.Errorf("page after the last: %v, want none", ids)
	}

	// A delete expects a revision, or any.
	if err := s.DeleteEndpoint(ctx, "ep_a", 1); !errors.Is(err, endpointstore.ErrRevision) {
		t.Errorf("delete expecting revision 1 of revision 2: %v, want ErrRevision", err)
	}
	v3 := version(t, s)
	if err := s.DeleteEndpoint(ctx, "ep_a", 2); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if version(t, s) == v3 {
		t.Errorf("the version stayed the same across a delete")
	}
	if err := s.DeleteEndpoint(ctx, "ep_a", 0); !errors.Is(err, endpointstore.ErrNotFound) {
		t.Errorf("delete of a deleted endpoint: %v, want ErrNotFound", err)
	}
	if err := s.DeleteEndpoint(ctx, "ep_b", 0); err != nil {
		t.Fatalf("delete whatever its revision: %v", err)
	}
	if _, err := s.GetEndpoint(ctx, "ep_a"); !errors.Is(err, endpointstore.ErrNotFound) {
		t.Errorf("get of a deleted endpoint: %v, want ErrNotFound", err)
	}
	if reopen == nil {
		return
	}
	// What was stored survives a restart.
	before := version(t, s)
	s = reopen(t)
	if ids := list(t, s, "", 10); fmt.Sprint(ids) != "[ep_c ep_d]" {
		t.Errorf("after a restart: %v, want [ep_c ep_d]", ids)
	}
	if got, err = s.GetEndpoint(ctx, "ep_c"); err != nil {
		t.Fatalf("get after a restart: %v", err)
	}
	c := Sample("ep_c")
	c.Revision = 1
	same(t, "the get after a restart", got, c)
	if _, err := s.PutEndpoint(ctx, got, 1); err != nil {
		t.Fatalf("update after a restart: %v", err)
	}
	if after := version(t, s); after == before {
		t.Errorf("the version after a restart's write is %d, as before the restart", after)
	}
}

// Sample is a valid endpoint with the id given, created an hour ago.
func Sample(id string) endpointstore.Endpoint {
	at := time.Date(2026, 11, 28, 19, 0, 0, 0, time.UTC)
	return endpointstore.Endpoint{
		ID: id, URL: "https://hooks.example.com/" + id, Description: "the " + id, Format: "envelope",
		Events: []string{"plant.created", "plant.deleted"}, Enabled: true,
		Secrets:   []endpointstore.Secret{{Value: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}},
		CreatedAt: at, UpdatedAt: at,
	}
}

func version(t *testing.T, s endpointstore.Store) int64 {
	t.Helper()
	v, err := s.EndpointsVersion(context.Background())
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	return v
}

func list(t *testing.T, s endpointstore.Store, after string, limit int) []string {
	t.Helper()
	eps, err := s.ListEndpoints(context.Background(), after, limit)
	if err != nil {
		t.Fatalf("list after %q: %v", after, err)
	}
	ids := make([]string, len(eps))
	for i, ep := range eps {
		ids[i] = ep.ID
	}
	return ids
}

func same(t *testing.T, what string, got, want endpointstore.Endpoint) {
	t.Helper()
	// Times compare as instants: a store may give them back in another
	// location.
	norm := func(ep endpointstore.Endpoint) endpointstore.Endpoint {
		ep.CreatedAt, ep.UpdatedAt = ep.CreatedAt.UTC(), ep.UpdatedAt.UTC()
		for i := range ep.Secrets {
			if !ep.Secrets[i].NotAfter.IsZero() {
				ep.Secrets[i].NotAfter = ep.Secrets[i].NotAfter.UTC()
			}
		}
		return ep
	}
	got, want = norm(got), norm(want)
	if !reflect.DeepEqual(got, want) {
		gotDoc, _ := endpointstore.Marshal(got)
		wantDoc, _ := endpointstore.Marshal(want)
		t.Errorf("%s:\n got %s\nwant %s", what, gotDoc, wantDoc)
	}
}
