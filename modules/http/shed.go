package httpserver

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/modules/http/httperr"
)

// shedRetryAfter is the Retry-After of a shed request, in seconds: requests
// here take milliseconds, so a slot frees up well within a second.
const shedRetryAfter = "1"

// Shedder caps the API requests served at once. Over the cap it answers 503
// with Retry-After at once rather than queueing: a queue would only add
// latency to every request while the overload lasts, and a client (or a
// load balancer) can retry on another replica straight away.
type Shedder struct {
	slots   chan struct{}
	shed    prometheus.Counter
	message string
}

// NewShedder returns a cap of max concurrent requests and registers its
// metrics on reg: plantstore_http_shed_total, and the slots in use and their
// number (to alert before the cap is reached).
func NewShedder(max int, reg prometheus.Registerer) (*Shedder, error) {
	s := &Shedder{
		slots: make(chan struct{}, max),
		shed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plantstore_http_shed_total",
			Help: "API requests refused with 503 because --max-concurrent-requests were already being served.",
		}),
		message: "the server is at its limit of " + strconv.Itoa(max) + " concurrent requests; retry later",
	}
	inUse := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "plantstore_http_concurrent_requests",
		Help: "Authenticated API requests being served now, out of plantstore_http_max_concurrent_requests.",
	}, func() float64 { return float64(len(s.slots)) })
	capacity := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "plantstore_http_max_concurrent_requests",
		Help: "The cap on concurrent API requests (--max-concurrent-requests).",
	}, func() float64 { return float64(cap(s.slots)) })
	for _, c := range []prometheus.Collector{s.shed, inUse, capacity} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Wrap is the middleware. A request holds its slot until its handler
// returns; its body, if its route takes one, was read before (readahead.go).
func (s *Shedder) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.slots <- struct{}{}:
		default:
			s.shed.Inc()
			w.Header().Set("Retry-After", shedRetryAfter)
			httperr.Write(w, http.StatusServiceUnavailable, s.message)
			return
		}
		defer func() { <-s.slots }()
		next.ServeHTTP(w, r)
	})
}
