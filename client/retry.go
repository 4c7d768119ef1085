package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// retryPolicy: exponential backoff with full jitter (the AWS architecture
// blog's "full jitter": a random wait up to the doubled bound), so that
// clients shed by one outage do not come back in step.
type retryPolicy struct {
	attempts   int // retries after the first try
	first, max time.Duration
}

var defaultRetries = retryPolicy{attempts: 4, first: 100 * time.Millisecond, max: 5 * time.Second}

// maxRetryAfter bounds a server's Retry-After: a confused proxy's hour is
// not a wait a call should make.
const maxRetryAfter = time.Minute

// do runs call until it answers something other than 503 or 429, or, when
// repeatable, a connection error; at most attempts more times. call returns
// the answer's status and Retry-After (0 when it failed to connect).
func (p retryPolicy) do(ctx context.Context, repeatable bool, call func() (status int, retryAfter string, err error)) error {
	for attempt := 0; ; attempt++ {
		status, retryAfter, err := call()
		retry := status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests ||
			(err != nil && status == 0 && repeatable && ctx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded))
		if !retry || attempt >= p.attempts {
			return err
		}
		wait := p.backoff(attempt)
		if d, ok := parseRetryAfter(retryAfter, time.Now()); ok {
			wait = d
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return err
		case <-timer.C:
		}
	}
}

// backoff is a random wait in [0, first·2^attempt), capped at max.
func (p retryPolicy) backoff(attempt int) time.Duration {
	bound := p.first << min(attempt, 20)
	if bound <= 0 || bound > p.max {
		bound = p.max
	}
	if bound <= 0 {
		return 0
	}
	return rand.N(bound) //nolint:gosec // G404: jitter spreads clients out; it needs no secrecy
}

// parseRetryAfter reads Retry-After as seconds or an HTTP date (RFC 9110
// §10.2.3), capped at maxRetryAfter.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return min(time.Duration(secs)*time.Second, maxRetryAfter), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter), true
	}
	return 0, false
}
