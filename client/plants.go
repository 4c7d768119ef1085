package client

import (
	"context"
	"net/http"

	"github.com/plantstore/plantstore/client/internal/gen"
)

// Plant is a stored plant. Tag is nil for a plant without a tag (an empty
// tag is a tag). ETag is the validator the server sent with it (Get,
// Update), for a conditional Update or Delete; it is empty elsewhere.
type Plant struct {
	ID   int64   `json:"id"`
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"`
	ETag string  `json:"-"`
}

// Create stores p. An identical plant stored already is a success (the
// contract makes a create safe to repeat, so connection errors are retried
// too); the same id with other content is ErrConflict.
func (c *Client) Create(ctx context.Context, p Plant) error {
	body := gen.NewPlant{Id: p.ID, Name: p.Name, Tag: p.Tag}
	return c.retries.do(ctx, true, func() (int, string, error) {
		resp, err := c.api.CreatePlantWithResponse(ctx, body)
		if err != nil {
			return 0, "", err
		}
		return answer(resp.HTTPResponse, resp.Body, http.StatusOK)
	})
}

// Get returns the plant stored under id, with its ETag; ErrNotFound when
// there is none.
func (c *Client) Get(ctx context.Context, id int64) (Plant, error) {
	var got Plant
	err := c.retries.do(ctx, true, func() (int, string, error) {
		resp, err := c.api.GetPlantWithResponse(ctx, id, nil)
		if err != nil {
			return 0, "", err
		}
		status, retryAfter, err := answer(resp.HTTPResponse, resp.Body, http.StatusOK)
		if err == nil {
			p := resp.JSON200
			got = Plant{ID: p.Id, Name: p.Name, Tag: p.Tag, ETag: resp.HTTPResponse.Header.Get("ETag")}
		}
		return status, retryAfter, err
	})
	return got, err
}

// Update replaces the name and tag of the plant stored under p.ID (a nil
// Tag removes the tag) and returns it with its new ETag. With ifMatch (an
// ETag from Get, or "*"), it replaces only that version: ErrPreconditionFailed
// when the plant changed meanwhile. ErrNotFound when it is missing.
// Connection errors are retried only without ifMatch: a conditional update
// whose answer was lost would fail its own precondition when repeated.
func (c *Client) Update(ctx context.Context, p Plant, ifMatch string) (Plant, error) {
	body := gen.PlantUpdate{Name: p.Name, Tag: p.Tag}
	var params gen.UpdatePlantParams
	if ifMatch != "" {
		params.IfMatch = &ifMatch
	}
	var got Plant
	err := c.retries.do(ctx, ifMatch == "", func() (int, string, error) {
		resp, err := c.api.UpdatePlantWithResponse(ctx, p.ID, &params, body)
		if err != nil {
			return 0, "", err
		}
		status, retryAfter, err := answer(resp.HTTPResponse, resp.Body, http.StatusOK)
		if err == nil {
			got = Plant{ID: p.ID, Name: resp.JSON200.Name, Tag: resp.JSON200.Tag, ETag: resp.HTTPResponse.Header.Get("ETag")}
		}
		return status, retryAfter, err
	})
	return got, err
}

// Delete removes the plant stored under id: ErrNotFound when there is
// none. With ifMatch, only that version (ErrPreconditionFailed otherwise).
// A connection error is not retried: a repeat of a delete that happened
// would answer ErrNotFound.
func (c *Client) Delete(ctx context.Context, id int64, ifMatch string) error {
	var params gen.DeletePlantParams
	if ifMatch != "" {
		params.IfMatch = &ifMatch
	}
	return c.retries.do(ctx, false, func() (int, string, error) {
		resp, err := c.api.DeletePlantWithResponse(ctx, id, &params)
		if err != nil {
			return 0, "", err
		}
		return answer(resp.HTTPResponse, resp.Body, http.StatusNoContent)
	})
}

// answer turns a generated call's answer into the retry loop's terms: the
// status, the Retry-After, and nil or an *Error for a status other than
// want.
func answer(hr *http.Response, body []byte, want int) (int, string, error) {
	if hr.StatusCode == want {
		return hr.StatusCode, "", nil
	}
	return hr.StatusCode, hr.Header.Get("Retry-After"), apiError(hr.StatusCode, body)
}
