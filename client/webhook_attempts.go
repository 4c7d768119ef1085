package client

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/plantstore/plantstore/client/internal/gen"
)

// WebhookAttempt is one attempt to deliver a webhook, as the server keeps
// it on record. Status is 0 when the attempt got no answer, and Error then
// says why (timeout, connection_refused, tls, ssrf_refused, interrupted,
// connection).
type WebhookAttempt struct {
	ID        string    `json:"id"` // its place in the record: a later attempt's is larger
	WebhookID string    `json:"webhook_id"`
	Endpoint  string    `json:"endpoint"`
	Attempt   int       `json:"attempt"` // from 1; a redelivery counts from 1 again
	At        time.Time `json:"at"`
	Succeeded bool      `json:"succeeded"`
	Status    int       `json:"status,omitempty"`
	Error     string    `json:"error,omitempty"`
	LatencyMS float64   `json:"latency_ms"`
	Answer    string    `json:"answer"` // the answer's first bytes (at most 1 KiB), as text
}

// WebhookMessage is one event for one endpoint: its state (pending,
// delivered or dead) and its attempts on record, oldest first.
type WebhookMessage struct {
	ID        string           `json:"id"`
	Type      string           `json:"type"`
	PlantID   int64            `json:"plant_id"`
	Version   int64            `json:"version"`
	CreatedAt time.Time        `json:"created_at"`
	Endpoint  string           `json:"endpoint"`
	State     string           `json:"state"`
	Attempts  []WebhookAttempt `json:"attempts"`
	Event     json.RawMessage  `json:"event"`
}

// WebhookAttemptsOptions select a page of an endpoint's attempts, newest
// first.
type WebhookAttemptsOptions struct {
	Status string // "succeeded", "failed", or "" for every attempt
	Limit  int    // 1 to 1000; 0 for the server's default (100)
	After  int64  // only attempts older than the one with this id; 0 from the newest
}

// WebhookAttemptsPage is one page of attempts; Next selects the page after
// it, nil on the last.
type WebhookAttemptsPage struct {
	Attempts []WebhookAttempt
	Next     *WebhookAttemptsOptions
}

// WebhookAttempts returns one page of endpoint's attempts, newest first;
// ErrNotFound when the endpoint is not the server's.
func (c *Client) WebhookAttempts(ctx context.Context, endpoint string, opts WebhookAttemptsOptions) (WebhookAttemptsPage, error) {
	var params gen.ListWebhookAttemptsParams
	if opts.Status != "" {
		status := gen.ListWebhookAttemptsParamsStatus(opts.Status)
		params.Status = &status
	}
	if opts.Limit != 0 {
		limit := int32(min(opts.Limit, 1<<30)) //nolint:gosec // G115: clamped
		params.Limit = &limit
	}
	if opts.After != 0 {
		params.After = &opts.After
	}
	var page WebhookAttemptsPage
	err := c.retries.do(ctx, true, func() (int, string, error) {
		resp, err := c.api.ListWebhookAttemptsWithResponse(ctx, endpoint, &params)
		if err != nil {
			return 0, "", err
		}
		status, retryAfter, err := answer(resp.HTTPResponse, resp.Body, http.StatusOK)
		if err != nil {
			return status, retryAfter, err
		}
		page = WebhookAttemptsPage{}
		if err := json.Unmarshal(resp.Body, &page.Attempts); err != nil {
			return status, "", err
		}
		page.Next, err = nextAttemptsPage(resp.HTTPResponse.Header.Values("Link"), opts.Status)
		return status, "", err
	})
	return page, err
}

// AllWebhookAttempts yields every attempt of endpoint that opts select
// (its Limit is the page size), newest first, page by page; it stops at
// the first error, which it yields.
func (c *Client) AllWebhookAttempts(ctx context.Context, endpoint string, opts WebhookAttemptsOptions) iter.Seq2[WebhookAttempt, error] {
	return func(yield func(WebhookAttempt, error) bool) {
		next := &opts
		for next != nil {
			page, err := c.WebhookAttempts(ctx, endpoint, *next)
			if err != nil {
				yield(WebhookAttempt{}, err)
				return
			}
			for _, a := range page.Attempts {
				if !yield(a, nil) {
					return
				}
			}
			next = page.Next
		}
	}
}

// nextAttemptsPage reads the rel="next" target of Link headers.
func nextAttemptsPage(links []string, status string) (*WebhookAttemptsOptions, error) {
	for _, link := range links {
		target, ok := relNext(link)
		if !ok {
			continue
		}
		u, err := url.Parse(target)
		if err != nil {
			return nil, errors.New("client: unreadable Link header " + strconv.Quote(link))
		}
		q := u.Query()
		next := WebhookAttemptsOptions{Status: status}
		if next.Limit, err = strconv.Atoi(q.Get("limit")); err != nil {
			return nil, errors.New("client: Link header with a bad limit: " + strconv.Quote(link))
		}
		if next.After, err = strconv.ParseInt(q.Get("after"), 10, 64); err != nil {
			return nil, errors.New("client: Link header with a bad after: " + strconv.Quote(link))
		}
		return &next, nil
	}
	return nil, nil
}

// WebhookMessage returns the message whose webhook-id is id, with its
// attempts; ErrNotFound when there is none (or it is past the retention).
func (c *Client) WebhookMessage(ctx context.Context, id string) (WebhookMessage, error) {
	var m WebhookMessage
	err := c.retries.do(ctx, true, func() (int, string, error) {
		resp, err := c.api.GetWebhookMessageWithResponse(ctx, id)
		if err != nil {
			return 0, "", err
		}
		status, retryAfter, err := answer(resp.HTTPResponse, resp.Body, http.StatusOK)
		if err == nil {
			err = json.Unmarshal(resp.Body, &m)
		}
		return status, retryAfter, err
	})
	return m, err
}

// RedeliverWebhook sends the message id again now, whatever its state (a
// dead letter included), with its webhook-id and bytes; it returns the
// message as queued (pending). ErrNotFound when there is none. A lost
// answer is not retried: the retry would send the message once more.
func (c *Client) RedeliverWebhook(ctx context.Context, id string) (WebhookMessage, error) {
	var m WebhookMessage
	err := c.retries.do(ctx, false, func() (int, string, error) {
		resp, err := c.api.RedeliverWebhookMessageWithResponse(ctx, id, nil)
		if err != nil {
			return 0, "", err
		}
		status, retryAfter, err := answer(resp.HTTPResponse, resp.Body, http.StatusAccepted)
		if err == nil {
			err = json.Unmarshal(resp.Body, &m)
		}
		return status, retryAfter, err
	})
	return m, err
}
