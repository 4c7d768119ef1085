package auth

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/plantstore/plantstore/modules/http/httperr"
)

// RateLimiter holds each token to a steady request rate with a burst, so
// that one client (a runaway retry loop, a leaked token) cannot take the
// whole service from the others. It sits after the auth check and keys on
// TokenID: only tokens that are, or were, configured ever get a limiter, so
// the set is as small as the tokens file and a client cannot grow it.
// golang.org/x/time/rate is the token bucket: well kept, and exact about
// how long until the next token, which becomes Retry-After.
type RateLimiter struct {
	limit   rate.Limit
	burst   int
	limited prometheus.Counter

	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

// NewRateLimiter allows perSecond requests per token on average and burst at
// once. A perSecond of 0 turns the limit off: Wrap then returns its handler
// unchanged. Refusals are counted on reg as
// plantstore_http_rate_limited_total.
func NewRateLimiter(perSecond float64, burst int, reg prometheus.Registerer) (*RateLimiter, error) {
	if perSecond < 0 || (perSecond > 0 && burst < 1) {
		return nil, fmt.Errorf("rate limit %v/s with burst %d: want a rate of 0 (off), or a positive rate and a burst of at least 1", perSecond, burst)
	}
	rl := &RateLimiter{
		limit: rate.Limit(perSecond),
		burst: burst,
		limited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plantstore_http_rate_limited_total",
			Help: "API requests refused with 429 because their token was over --rate-limit.",
		}),
		limiters: make(map[string]*rate.Limiter),
	}
	if err := reg.Register(rl.limited); err != nil {
		return nil, err
	}
	return rl, nil
}

// Wrap is the middleware.
func (rl *RateLimiter) Wrap(next http.Handler) http.Handler {
	if rl.limit <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wait := rl.reserve(TokenID(r.Context())); wait > 0 {
			rl.limited.Inc()
			w.Header().Set("Retry-After", strconv.FormatInt(retryAfterSeconds(wait), 10))
			httperr.Write(w, http.StatusTooManyRequests, "too many requests for this token; retry after the given delay")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// reserve takes a token from id's bucket and returns 0, or, when the bucket
// is empty, takes nothing and returns how long until it would not be.
func (rl *RateLimiter) reserve(id string) time.Duration {
	now := time.Now()
	res := rl.limiter(id).ReserveN(now, 1)
	wait := res.DelayFrom(now)
	if wait > 0 {
		res.CancelAt(now) // a refused request must not use up the client's future tokens
	}
	return wait
}

func (rl *RateLimiter) limiter(id string) *rate.Limiter {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	l, ok := rl.limiters[id]
	if !ok {
		l = rate.NewLimiter(rl.limit, rl.burst)
		rl.limiters[id] = l
	}
	return l
}

// retryAfterSeconds rounds a wait up to whole seconds, the unit of
// Retry-After, so that a client that waits as told finds a token.
func retryAfterSeconds(wait time.Duration) int64 {
	return max(1, int64(math.Ceil(wait.Seconds())))
}
