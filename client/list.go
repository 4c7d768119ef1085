package client

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/plantstore/plantstore/client/internal/gen"
)

// ListOptions select a page of plants.
type ListOptions struct {
	Limit int     // 1 to 1000; 0 for the server's default (100)
	After *int64  // only ids greater than this
	Tag   *string // only plants with exactly this tag
}

// Page is one page of plants in id order. Next selects the page after it,
// nil on the last page (taken from the answer's Link rel="next").
// ChangesCursor is the change feed's cursor taken before the page was read
// (the Plantstore-Changes-Cursor header; "" from a server without the
// feed): a copy built from the pages, then updated by Changes from the
// first page's cursor, misses nothing.
type Page struct {
	Plants        []Plant
	Next          *ListOptions
	ChangesCursor string
}

// List returns one page of plants.
func (c *Client) List(ctx context.Context, opts ListOptions) (Page, error) {
	params := gen.ListPlantsParams{After: opts.After, Tag: opts.Tag}
	if opts.Limit != 0 {
		limit := int32(min(opts.Limit, 1<<30)) //nolint:gosec // G115: clamped
		params.Limit = &limit
	}
	var page Page
	err := c.retries.do(ctx, true, func() (int, string, error) {
		resp, err := c.api.ListPlantsWithResponse(ctx, &params)
		if err != nil {
			return 0, "", err
		}
		status, retryAfter, err := answer(resp.HTTPResponse, resp.Body, http.StatusOK)
		if err != nil {
			return status, retryAfter, err
		}
		page.Plants = make([]Plant, len(*resp.JSON200))
		for i, p := range *resp.JSON200 {
			page.Plants[i] = Plant{ID: p.Id, Name: p.Name, Tag: p.Tag}
		}
		page.ChangesCursor = resp.HTTPResponse.Header.Get("Plantstore-Changes-Cursor")
		page.Next, err = nextPage(resp.HTTPResponse.Header.Values("Link"))
		return status, "", err
	})
	return page, err
}

// All yields every plant selected by opts (its Limit is the page size), in
// id order, following the Link headers page by page; it stops at the first
// error, which it yields.
func (c *Client) All(ctx context.Context, opts ListOptions) iter.Seq2[Plant, error] {
	return func(yield func(Plant, error) bool) {
		next := &opts
		for next != nil {
			page, err := c.List(ctx, *next)
			if err != nil {
				yield(Plant{}, err)
				return
			}
			for _, p := range page.Plants {
				if !yield(p, nil) {
					return
				}
			}
			next = page.Next
		}
	}
}

// nextPage reads the rel="next" target of Link headers into ListOptions.
func nextPage(links []string) (*ListOptions, error) {
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
		var next ListOptions
		if v := q.Get("limit"); v != "" {
			if next.Limit, err = strconv.Atoi(v); err != nil {
				return nil, errors.New("client: Link header with a bad limit: " + strconv.Quote(link))
			}
		}
		if v := q.Get("after"); v != "" {
			after, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, errors.New("client: Link header with a bad after: " + strconv.Quote(link))
			}
			next.After = &after
		}
		if q.Has("tag") {
			tag := q.Get("tag")
			next.Tag = &tag
		}
		return &next, nil
	}
	return nil, nil
}

// relNext returns the target of a `<target>; rel="next"` link value (the
// server sends one link per header line).
func relNext(link string) (string, bool) {
	target, params, ok := strings.Cut(strings.TrimSpace(link), ">")
	if !ok || !strings.HasPrefix(target, "<") {
		return "", false
	}
	params = strings.ToLower(params)
	if !strings.Contains(params, `rel="next"`) && !strings.Contains(params, "rel=next") {
		return "", false
	}
	return target[1:], true
}
