// Package client is the Go client of the plantstore API.
//
// It is a small hand-written layer over a client generated from the
// project's OpenAPI document (internal/gen, by oapi-codegen), as the
// Kubernetes typed clients are: plain types, typed errors that work with
// errors.Is and errors.As, retries that honour Retry-After, and an
// iterator over every plant.
//
// To keep a copy of the plants (or of one tag's) up to date, use Follow:
// it lists them, follows the change feed from the listing's cursor, and
// when the cursor is gone (the follower fell behind the server's retention,
// or the store was restored) lists again by itself, handing over only the
// difference. The caller applies its events (Added, Changed, Removed) and
// is told InSync when its copy equals the store. Changes is the feed
// itself, for callers that want each change and handle ErrCursorGone.
//
// Every call takes a context. For W3C trace propagation pass an
// instrumented transport (otelhttp.NewTransport, say) with WithHTTPClient:
// the client sends each request with the caller's context, so the
// transport sees the caller's span.
package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/plantstore/plantstore/client/internal/gen"
)

// Client calls one plantstore API. It is safe for concurrent use.
type Client struct {
	api     *gen.ClientWithResponses
	stream  *gen.Client // api's requests without the client's timeout, for Import
	retries retryPolicy
}

// Option configures a Client.
type Option func(*settings)

type settings struct {
	token   string
	http    *http.Client
	retries retryPolicy
}

// WithToken sends token as the bearer credentials of every request.
func WithToken(token string) Option { return func(s *settings) { s.token = token } }

// WithHTTPClient sends requests with hc (its transport, timeouts, tracing)
// instead of a client with a 30 s timeout over http.DefaultTransport.
func WithHTTPClient(hc *http.Client) Option { return func(s *settings) { s.http = hc } }

// WithRetries sets how many times a call is retried after a 503, a 429 or,
// for operations safe to repeat, a connection error (default 4; 0 turns
// retries off), and the first backoff, which doubles up to maxWait with
// full jitter. A Retry-After from the server replaces the backoff.
func WithRetries(attempts int, first, maxWait time.Duration) Option {
	return func(s *settings) { s.retries = retryPolicy{attempts: attempts, first: first, max: maxWait} }
}

// New returns a client of the API at baseURL, e.g. "http://127.0.0.1:8080".
func New(baseURL string, opts ...Option) (*Client, error) {
	s := settings{
		http:    &http.Client{Timeout: 30 * time.Second},
		retries: defaultRetries,
	}
	for _, o := range opts {
		o(&s)
	}
	if baseURL == "" {
		return nil, errors.New("client: empty base URL")
	}
	editors := []gen.ClientOption{gen.WithHTTPClient(s.http)}
	if s.token != "" {
		auth := "Bearer " + s.token
		editors = append(editors, gen.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", auth)
			return nil
		}))
	}
	api, err := gen.NewClientWithResponses(strings.TrimSuffix(baseURL, "/"), editors...)
	if err != nil {
		return nil, err
	}
	untimed := *s.http
	untimed.Timeout = 0
	stream, err := gen.NewClient(strings.TrimSuffix(baseURL, "/"), append(editors, gen.WithHTTPClient(&untimed))...)
	if err != nil {
		return nil, err
	}
	return &Client{api: api, stream: stream, retries: s.retries}, nil
}
