package httpserver

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
	"github.com/plantstore/plantstore/modules/httpserver/httperr"
)

// shedRetryAfter is the Retry-After of a shed request, in seconds: requests
// here take milliseconds, so a slot frees up well within a second.
const shedRetryAfter = "1"

// Shedder caps the API requests served at once. Over the cap it answers 503
// with Retry-After at once rather than queueing: a queue would only add
// latency to every request while the overload lasts, and a client (or a
// load balancer) can retry on another replica straight away.
//
// A request whose answer lasts (httpapi.Last) leaves its slot for a pool
// of its kind, capped in total and per caller: it is the httpapi's
// LastingLimiter.
type Shedder struct {
	slots   chan struct{}
	shed    prometheus.Counter
	message string
	pools   [2]*lastingPool // by httpapi.Lasting
}

// NewShedder returns a cap of max concurrent requests, with the default
// caps of lasting answers, and registers its metrics on reg.
func NewShedder(max int, reg prometheus.Registerer) (*Shedder, error) {
	l := DefaultLimits
	l.MaxConcurrentRequests = max
	return NewShedderFor(l, reg)
}

// NewShedderFor returns the cap of l.MaxConcurrentRequests and the pools
// of lasting answers l sets (a zero field takes its default), and
// registers their metrics on reg: plantstore_http_shed_total, the slots in
// use and their number (to alert before the cap is reached), and the
// lasting answers open and refused, by kind.
func NewShedderFor(l Limits, reg prometheus.Registerer) (*Shedder, error) {
	l = withDefaults(l)
	max := l.MaxConcurrentRequests
	s := &Shedder{
		slots: make(chan struct{}, max),
		shed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "plantstore_http_shed_total",
			Help: "API requests refused with 503 because --max-concurrent-requests were already being served.",
		}),
		message: "the server is at its limit of " + strconv.Itoa(max) + " concurrent requests; retry later",
	}
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plantstore_http_lasting_refused_total",
		Help: "Change streams, long polls (kind follow) and imports (kind import) refused because the caller (reason caller) or the server (reason total) had as many open as allowed.",
	}, []string{"kind", "reason"})
	inUse := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "plantstore_http_concurrent_requests",
		Help: "Authenticated API requests being served now, out of plantstore_http_max_concurrent_requests.",
	}, func() float64 { return float64(len(s.slots)) })
	capacity := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "plantstore_http_max_concurrent_requests",
		Help: "The cap on concurrent API requests (--max-concurrent-requests).",
	}, func() float64 { return float64(cap(s.slots)) })
	collectors := []prometheus.Collector{s.shed, inUse, capacity, refused}
	for kind, caps := range map[httpapi.Lasting][2]int{
		httpapi.Follow: {l.MaxFollowers, l.MaxFollowersPerCaller},
		httpapi.Import: {l.MaxImports, l.MaxImportsPerCaller},
	} {
		p := newLastingPool(kind, caps[0], caps[1], refused)
		s.pools[kind] = p
		collectors = append(collectors, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "plantstore_http_lasting_requests",
			Help:        "Change streams and long polls (kind follow) and imports (kind import) open now; they hold no slot of --max-concurrent-requests.",
			ConstLabels: prometheus.Labels{"kind": kind.String()},
		}, p.inUse))
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Wrap is the middleware. A request holds its slot until its handler
// returns, or until it moves to a pool of lasting answers (Last); its
// body, if its route takes one, was read before (readahead.go).
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
		res, _ := r.Context().Value(resolvedKey{}).(*resolved)
		if res != nil {
			res.Lasting = s
		}
		defer s.release(res)
		next.ServeHTTP(w, r)
	})
}

// release gives back the request's slot, unless it moved to a pool.
func (s *Shedder) release(res *resolved) {
	if res == nil || !res.lasting {
		<-s.slots
	}
}

// Last implements httpapi.LastingLimiter.
func (s *Shedder) Last(w http.ResponseWriter, r *http.Request, kind httpapi.Lasting, caller string) (end func(), ok bool) {
	res, _ := r.Context().Value(resolvedKey{}).(*resolved)
	if res == nil || res.lasting || int(kind) >= len(s.pools) {
		return func() {}, true // not admitted here, or moved already
	}
	p := s.pools[kind]
	if !p.enter(w, caller) {
		return nil, false
	}
	res.lasting = true
	<-s.slots
	return func() { p.leave(caller) }, true
}

// lastingRetryAfter is the Retry-After of a refused lasting answer, in
// seconds: another may end at any time (a long poll within a minute).
const lastingRetryAfter = "1"

// lastingPool counts the open lasting answers of one kind, in total and
// per caller.
type lastingPool struct {
	kind           httpapi.Lasting
	max, perCaller int
	refusedCaller  prometheus.Counter
	refusedTotal   prometheus.Counter
	callerMessage  string
	totalMessage   string

	mu       sync.Mutex
	open     int
	byCaller map[string]int // callers with an answer open only
}

func newLastingPool(kind httpapi.Lasting, max, perCaller int, refused *prometheus.CounterVec) *lastingPool {
	what := "change streams and long polls"
	if kind == httpapi.Import {
		what = "import streams"
	}
	return &lastingPool{
		kind: kind, max: max, perCaller: perCaller,
		refusedCaller: refused.WithLabelValues(kind.String(), "caller"),
		refusedTotal:  refused.WithLabelValues(kind.String(), "total"),
		callerMessage: "this token has " + strconv.Itoa(perCaller) + " " + what + " open, as many as one token may; end one first",
		totalMessage:  "the server has " + strconv.Itoa(max) + " " + what + " open, as many as it serves at once; retry later",
		byCaller:      make(map[string]int),
	}
}

// enter takes a place for caller, or answers the refusal and returns
// false: 429 over the caller's share, 503 over the total.
func (p *lastingPool) enter(w http.ResponseWriter, caller string) bool {
	p.mu.Lock()
	n := p.byCaller[caller]
	callerFull, full := n >= p.perCaller, p.open >= p.max
	if !callerFull && !full {
		p.byCaller[caller] = n + 1
		p.open++
	}
	p.mu.Unlock()
	switch {
	case callerFull:
		p.refusedCaller.Inc()
		w.Header().Set("Retry-After", lastingRetryAfter)
		httperr.Write(w, http.StatusTooManyRequests, p.callerMessage)
		return false
	case full:
		p.refusedTotal.Inc()
		w.Header().Set("Retry-After", lastingRetryAfter)
		httperr.Write(w, http.StatusServiceUnavailable, p.totalMessage)
		return false
	}
	return true
}

func (p *lastingPool) leave(caller string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open--
	if n := p.byCaller[caller] - 1; n > 0 {
		p.byCaller[caller] = n
	} else {
		delete(p.byCaller, caller)
	}
}

func (p *lastingPool) inUse() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return float64(p.open)
}
