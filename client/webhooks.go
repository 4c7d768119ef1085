package client

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/plantstore/plantstore/client/internal/gen"
)

// WebhookEndpoint is a webhook endpoint as the API shows it (with
// --webhooks-api): never its secrets, but their fingerprints.
type WebhookEndpoint struct {
	ID             string               `json:"id"`
	Source         string               `json:"source"` // "api", or "file" for the webhooks file's (read-only)
	URL            string               `json:"url"`
	Description    string               `json:"description,omitempty"`
	Format         string               `json:"format"`
	Events         []string             `json:"events"`
	Enabled        bool                 `json:"enabled"`
	DisabledReason string               `json:"disabled_reason,omitempty"`
	Secrets        []WebhookSecretShown `json:"secrets"`
	CreatedAt      *time.Time           `json:"created_at,omitempty"`
	UpdatedAt      *time.Time           `json:"updated_at,omitempty"`
}

// WebhookSecretShown is a secret as the API shows it.
type WebhookSecretShown struct {
	Fingerprint string     `json:"fingerprint"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
}

// NewWebhookEndpoint is what makes an endpoint: a URL, and optionally a
// description, a format ("origin", the default, or "envelope") and the
// events it gets (none: every event of the format).
type NewWebhookEndpoint struct {
	URL         string
	Description string
	Format      string
	Events      []string
}

// WebhookSecret is a signing secret the API answered once. It prints
// redacted: Reveal gives its text, to be stored where the receiver reads
// it.
type WebhookSecret struct{ text string }

// Reveal returns the secret's text, "whsec_...".
func (s WebhookSecret) Reveal() string { return s.text }

func (WebhookSecret) String() string { return "whsec_[redacted]" }

// GoString hides the secret from %#v too.
func (s WebhookSecret) GoString() string { return s.String() }

// WebhookEndpoints returns every webhook endpoint, following the pages.
func (c *Client) WebhookEndpoints(ctx context.Context) ([]WebhookEndpoint, error) {
	out := []WebhookEndpoint{}
	limit := 1000
	params := gen.ListWebhookEndpointsParams{Limit: &limit}
	for {
		var next *string
		err := c.retries.do(ctx, true, func() (int, string, error) {
			resp, err := c.api.ListWebhookEndpointsWithResponse(ctx, &params)
			if err != nil {
				return 0, "", err
			}
			status, retryAfter, err := answer(resp.HTTPResponse, resp.Body, http.StatusOK)
			if err != nil {
				return status, retryAfter, err
			}
			for _, ep := range *resp.JSON200 {
				out = append(out, shownEndpoint(ep))
			}
			next, err = nextAfter(resp.HTTPResponse.Header.Values("Link"))
			return status, "", err
		})
		if err != nil || next == nil {
			return out, err
		}
		params.After = next
	}
}

// nextAfter is the after of a Link rel="next", nil without one.
func nextAfter(links []string) (*string, error) {
	for _, link := range links {
		target, ok := relNext(link)
		if !ok {
			continue
		}
		u, err := url.Parse(target)
		if err != nil || !u.Query().Has("after") {
			return nil, errors.New("client: unreadable Link header")
		}
		after := u.Query().Get("after")
		return &after, nil
	}
	return nil, nil
}

// CreateWebhookEndpoint makes an endpoint and returns it with its secret,
// which the API gives this once. A create is not repeated after a lost
// answer: it would make a second endpoint.
func (c *Client) CreateWebhookEndpoint(ctx context.Context, ep NewWebhookEndpoint) (WebhookEndpoint, WebhookSecret, error) {
	body := gen.NewWebhookEndpoint{Url: ep.URL}
	if ep.Description != "" {
		body.Description = &ep.Description
	}
	if ep.Format != "" {
		f := gen.NewWebhookEndpointFormat(ep.Format)
		body.Format = &f
	}
	if ep.Events != nil {
		events := make([]gen.NewWebhookEndpointEvents, len(ep.Events))
		for i, e := range ep.Events {
			events[i] = gen.NewWebhookEndpointEvents(e)
		}
		body.Events = &events
	}
	var got WebhookEndpoint
	var secret WebhookSecret
	err := c.retries.do(ctx, false, func() (int, string, error) {
		resp, err := c.api.CreateWebhookEndpointWithResponse(ctx, body)
		if err != nil {
			return 0, "", err
		}
		status, retryAfter, err := answer(resp.HTTPResponse, resp.Body, http.StatusCreated)
		if err == nil {
			got, secret = withSecret(*resp.JSON201)
		}
		return status, retryAfter, err
	})
	return got, secret, err
}

// RotateWebhookSecret gives the endpoint id a new secret, returned this
// once; its current secrets keep signing for overlap (the server's
// default, 24h, when negative), then are dropped.
func (c *Client) RotateWebhookSecret(ctx context.Context, id string, overlap time.Duration) (WebhookEndpoint, WebhookSecret, error) {
	var body gen.WebhookSecretRotation
	if overlap >= 0 {
		text := overlap.String()
		body.Overlap = &text
	}
	var got WebhookEndpoint
	var secret WebhookSecret
	err := c.retries.do(ctx, false, func() (int, string, error) {
		resp, err := c.api.RotateWebhookEndpointSecretWithResponse(ctx, id, nil, body)
		if err != nil {
			return 0, "", err
		}
		status, retryAfter, err := answer(resp.HTTPResponse, resp.Body, http.StatusOK)
		if err == nil {
			got, secret = withSecret(*resp.JSON200)
		}
		return status, retryAfter, err
	})
	return got, secret, err
}

// DeleteWebhookEndpoint removes the endpoint id; ErrNotFound when there
// is none.
func (c *Client) DeleteWebhookEndpoint(ctx context.Context, id string) error {
	return c.retries.do(ctx, false, func() (int, string, error) {
		resp, err := c.api.DeleteWebhookEndpointWithResponse(ctx, id, nil)
		if err != nil {
			return 0, "", err
		}
		return answer(resp.HTTPResponse, resp.Body, http.StatusNoContent)
	})
}

func shownEndpoint(ep gen.WebhookEndpoint) WebhookEndpoint {
	out := WebhookEndpoint{ID: ep.Id, Source: string(ep.Source), URL: ep.Url, Format: string(ep.Format), Enabled: ep.Enabled,
		Events: []string{}, Secrets: []WebhookSecretShown{}, CreatedAt: ep.CreatedAt, UpdatedAt: ep.UpdatedAt}
	if ep.Description != nil {
		out.Description = *ep.Description
	}
	if ep.DisabledReason != nil {
		out.DisabledReason = *ep.DisabledReason
	}
	for _, e := range ep.Events {
		out.Events = append(out.Events, string(e))
	}
	for _, s := range ep.Secrets {
		out.Secrets = append(out.Secrets, WebhookSecretShown{Fingerprint: s.Fingerprint, ExpiresAt: s.ExpiresAt})
	}
	return out
}

// withSecret splits an answer that carries a secret into the endpoint
// and the secret.
func withSecret(ep gen.WebhookEndpointWithSecret) (WebhookEndpoint, WebhookSecret) {
	shown := gen.WebhookEndpoint{Id: ep.Id, Source: gen.WebhookEndpointSource(ep.Source), Url: ep.Url,
		Format: gen.WebhookEndpointFormat(ep.Format), Enabled: ep.Enabled, Description: ep.Description,
		DisabledReason: ep.DisabledReason, CreatedAt: ep.CreatedAt, UpdatedAt: ep.UpdatedAt}
	for _, e := range ep.Events {
		shown.Events = append(shown.Events, gen.WebhookEndpointEvents(e))
	}
	for _, s := range ep.Secrets {
		shown.Secrets = append(shown.Secrets, struct {
			ExpiresAt   *time.Time `json:"expires_at,omitempty"`
			Fingerprint string     `json:"fingerprint"`
		}{s.ExpiresAt, s.Fingerprint})
	}
	return shownEndpoint(shown), WebhookSecret{text: ep.Secret}
}
