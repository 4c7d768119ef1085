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

	"github.com/plantstore/plantstore/modules/auth/principal"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// rateLimiter holds each caller to a steady request rate with a burst, so
// that one client (a runaway retry loop, a leaked token) cannot take the
// whole service from the others. It sits after the auth check and keys on
// the caller's principal ID: only authenticated callers ever get a
// limiter, so a client cannot grow the set with made-up credentials.
// golang.org/x/time/rate is the token bucket: well kept, and exact about
// how long until the next token, which becomes Retry-After.
//
// Limiters of callers gone quiet are dropped (sweep), so that the set stays
// as small as the callers of the last little while, even when principals
// come and go (rotated tokens; JWT subjects, later).
type rateLimiter struct {
	limit   rate.Limit
	burst   int
	limited prometheus.Counter

	mu        sync.Mutex
	limiters  map[string]*rate.Limiter
	nextSweep time.Time
}

// newRateLimiter allows perSecond requests per caller on average and burst
// at once. A perSecond of 0 turns the limit off: Wrap then returns its
// handler unchanged. Refusals are counted on reg as
// plantstore_http_rate_limited_total.
func newRateLimiter(perSecond float64, burst int, reg prometheus.Registerer) (*rateLimiter, error) {
	if perSecond < 0 || (perSecond > 0 && burst < 1) {
		return nil, fmt.Errorf("rate limit %v/s with burst %d: want a rate of 0 (off), or a positive rate and a burst of at least 1", perSecond, burst)
	}
	rl := &rateLimiter{
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
func (rl *rateLimiter) Wrap(next http.Handler) http.Handler {
	if rl.limit <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var id string // "" for no principal: behind auth, never
		if p := principal.FromContext(r.Context()); p != nil {
			id = p.ID
		}
		if wait := rl.reserve(id); wait > 0 {
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
func (rl *rateLimiter) reserve(id string) time.Duration {
	now := time.Now()
	res := rl.limiter(id, now).ReserveN(now, 1)
	wait := res.DelayFrom(now)
	if wait > 0 {
		res.CancelAt(now) // a refused request must not use up the client's future tokens
	}
	return wait
}

func (rl *rateLimiter) limiter(id string, now time.Time) *rate.Limiter {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if !now.Before(rl.nextSweep) {
		rl.sweep(now)
	}
	l, ok := rl.limiters[id]
	if !ok {
		l = rate.NewLimiter(rl.limit, rl.burst)
		rl.limiters[id] = l
	}
	return l
}

// sweep drops the limiters whose bucket is full again, and schedules the
// next sweep a refill later. A full bucket is exactly what a new limiter
// is, so dropping one changes no answer: a caller mid-penalty keeps its
// limiter, a caller that came back after a pause finds what it left.
// That is why this is a sweep and not an expiring cache (an LRU with a
// TTL, such as hashicorp's expirable LRU): those drop entries by age or by
// count, and dropping a limiter whose bucket is not full would forgive a
// client early, or let a crowd of callers evict a flooding one's penalty.
// The sweep walks the map under the lock once per refill time, at least
// every minSweepInterval: a cost proportional to the callers, amortized
// over their requests.
func (rl *rateLimiter) sweep(now time.Time) {
	for id, l := range rl.limiters {
		if l.TokensAt(now) >= float64(rl.burst) {
			delete(rl.limiters, id)
		}
	}
	rl.nextSweep = now.Add(max(minSweepInterval, rl.refill()))
}

// minSweepInterval bounds how often the limiters are swept when the bucket
// refills fast.
const minSweepInterval = time.Minute

// maxSweepInterval keeps a very slow rate's refill time within a Duration.
const maxSweepInterval = 24 * time.Hour

// refill is how long an empty bucket takes to fill again, at most
// maxSweepInterval.
func (rl *rateLimiter) refill() time.Duration {
	seconds := float64(rl.burst) / float64(rl.limit)
	if seconds >= maxSweepInterval.Seconds() {
		return maxSweepInterval
	}
	return time.Duration(seconds * float64(time.Second))
}

// retryAfterSeconds rounds a wait up to whole seconds, the unit of
// Retry-After, so that a client that waits as told finds a token.
func retryAfterSeconds(wait time.Duration) int64 {
	return max(1, int64(math.Ceil(wait.Seconds())))
}
