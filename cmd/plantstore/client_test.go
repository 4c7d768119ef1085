package main

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/modules/plants"
)

// newTestClient is a client of s with the harness token.
func newTestClient(t *testing.T, s *testServer, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(s.API, append([]client.Option{client.WithToken(testToken), client.WithHTTPClient(s.Client)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClient runs every client call against the real server on every store.
func TestClient(t *testing.T) {
	t.Parallel()
	forEachStore(t, testClient)
}

func testClient(t *testing.T, cfg config) {
	s := startServer(t, cfg)
	c := newTestClient(t, s)
	ctx := context.Background()
	tag := "tropical"
	monstera := client.Plant{ID: 1, Name: "Monstera", Tag: &tag}
	for _, p := range []client.Plant{monstera, monstera, {ID: -5, Name: "Fern ☘"}, {ID: 9223372036854775807, Name: "max", Tag: &tag}} {
		if err := c.Create(ctx, p); err != nil {
			t.Fatalf("Create(%+v) = %v", p, err)
		}
	}
	err := c.Create(ctx, client.Plant{ID: 1, Name: "other"})
	var apiErr *client.Error
	if !errors.Is(err, client.ErrConflict) || !errors.As(err, &apiErr) ||
		apiErr.Status != http.StatusConflict || apiErr.Message != "plant 1 already exists with a different name or tag" {
		t.Fatalf("conflicting Create = %v, want ErrConflict with the server's message", err)
	}

	got, err := c.Get(ctx, 1)
	if err != nil || got.Name != "Monstera" || got.Tag == nil || *got.Tag != tag || got.ETag == "" {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if _, err := c.Get(ctx, 2); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Get(2) = %v, want ErrNotFound", err)
	}
	updated, err := c.Update(ctx, client.Plant{ID: 1, Name: "Monstera deliciosa"}, got.ETag)
	if err != nil || updated.Name != "Monstera deliciosa" || updated.Tag != nil || updated.ETag == got.ETag {
		t.Fatalf("Update = %+v, %v", updated, err)
	}
	if _, err := c.Update(ctx, client.Plant{ID: 1, Name: "x"}, got.ETag); !errors.Is(err, client.ErrPreconditionFailed) {
		t.Fatalf("Update with a stale ETag = %v, want ErrPreconditionFailed", err)
	}
	if err := c.Delete(ctx, 1, got.ETag); !errors.Is(err, client.ErrPreconditionFailed) {
		t.Fatalf("Delete with a stale ETag = %v, want ErrPreconditionFailed", err)
	}
	if _, err := c.Update(ctx, client.Plant{ID: 3, Name: "x"}, ""); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Update of a missing plant = %v, want ErrNotFound", err)
	}

	// All follows the Link headers: pages of 2 over 3 plants.
	var ids []int64
	for p, err := range c.All(ctx, client.ListOptions{Limit: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	if len(ids) != 3 || ids[0] != -5 || ids[1] != 1 || ids[2] != 9223372036854775807 {
		t.Fatalf("All = %v, want [-5 1 9223372036854775807]", ids)
	}
	var tagged []int64
	for p, err := range c.All(ctx, client.ListOptions{Limit: 1, Tag: &tag}) {
		if err != nil {
			t.Fatal(err)
		}
		tagged = append(tagged, p.ID)
	}
	if len(tagged) != 1 || tagged[0] != 9223372036854775807 {
		t.Fatalf("All tagged = %v, want [9223372036854775807]", tagged)
	}

	if err := c.Delete(ctx, 1, updated.ETag); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	if err := c.Delete(ctx, 1, ""); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("second Delete = %v, want ErrNotFound", err)
	}
	bad, err := client.New(s.API, client.WithToken("wrong-token"), client.WithHTTPClient(s.Client))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Get(ctx, 1); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("Get with a wrong token = %v, want ErrUnauthorized", err)
	}
}

// TestClientRetriesThroughPostgresOutage: with the database down, a create
// is answered 503 with Retry-After; the client waits and retries, and
// succeeds once the database is back, with no error seen by the caller.
func TestClientRetriesThroughPostgresOutage(t *testing.T) {
	t.Parallel()                    // a cluster of its own
	cluster := pgtest.NewCluster(t) // its own: stopping the shared one would fail other tests
	cfg := testConfig(t)
	cfg.Plants.Store = plants.StorePostgres
	cfg.Plants.Postgres.URL = cluster.NewDatabase(t)
	s := startServer(t, cfg)

	seen503 := make(chan struct{})
	var once sync.Once
	hc := &http.Client{Timeout: 10 * time.Second, Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := s.Client.Transport.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusServiceUnavailable {
			once.Do(func() { close(seen503) })
		}
		return resp, err
	})}
	// Enough retries to outlast a restart of the database by far; the test
	// waits for the outcome, not for a time.
	c, err := client.New(s.API, client.WithToken(testToken), client.WithHTTPClient(hc),
		client.WithRetries(1000, 50*time.Millisecond, 500*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Create(context.Background(), client.Plant{ID: 42, Name: "through the outage"}) }()
	<-seen503
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Create through the outage = %v", err)
	}
	got, err := c.Get(context.Background(), 42)
	if err != nil || got.Name != "through the outage" {
		t.Fatalf("Get after the outage = %+v, %v", got, err)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
