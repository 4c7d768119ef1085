package httpapi

import "time"

// Limits bound what one connection or request may take of a server, so that
// slow or hostile clients cannot hold its memory, goroutines or sockets.
// A zero field means its default (see DefaultLimits). The http module
// provides the listeners' Limits to the graph, for a route that streams and
// paces itself within the read and write timeouts.
type Limits struct {
	// ReadHeaderTimeout is how long a client has to send the request line
	// and headers: the cut-off for slowloris clients that dribble them.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is how long a client has to send a whole request, body
	// included, from the moment the connection is read.
	ReadTimeout time.Duration
	// WriteTimeout runs from the end of the request headers to the end of
	// the answer, so it covers reading the body, handling and writing.
	WriteTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its next
	// request.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps the request line and headers together.
	MaxHeaderBytes int
	// MaxConcurrentRequests caps the authenticated API requests served at
	// once; over it the API answers 503 with Retry-After (see Shedder).
	MaxConcurrentRequests int
	// MaxConnections caps the API listener's open connections; over it new
	// connections wait in the kernel's accept queue (see the http module's
	// conncap.go). Zero derives it from the file limit.
	MaxConnections int
	// MaxFollowers caps the change streams and long polls open at once, of
	// all callers, and MaxFollowersPerCaller those of one caller (see
	// Last); they hold none of the MaxConcurrentRequests slots.
	MaxFollowers, MaxFollowersPerCaller int
	// MaxImports and MaxImportsPerCaller cap the bulk import streams open
	// at once, in total and for one caller.
	MaxImports, MaxImportsPerCaller int
}

// DefaultLimits are the limits of a server whose Config leaves them zero,
// and the flags' defaults (MaxConnections, zero here, is derived from the
// file limit at start). Why these:
//   - 5s for the headers: a real client sends them in one packet; five
//     seconds forgives a bad mobile link while a slowloris connection is
//     dropped quickly.
//   - 30s for the whole request: a 1 MiB body (the default limit) needs
//     only ~35 KB/s to arrive in time.
//   - 40s to answer, ten more than the read: the write deadline starts when
//     the headers are in, so it must outlast a body that arrives just
//     before the read deadline, plus the store call.
//   - 120s idle: longer than common load-balancer idle timeouts (60s), so
//     the balancer, not us, closes idle keep-alive connections and never
//     sends on one we just closed.
//   - 64 KiB of headers: the API needs a bearer token and a few standard
//     headers; 64 KiB still fits large trace and baggage headers, where
//     net/http's default (1 MiB) lets each connection pin a megabyte.
//   - 256 concurrent requests: at a few milliseconds per store call it
//     admits tens of thousands of requests per second, more than one
//     replica's CPUs serve. Each may hold a body of up to --max-body-bytes
//     while it is decoded, so the product of the two (256 MiB by default)
//     is what a burst of the largest bodies can take; lower either flag
//     where the memory limit is tight.
//   - 256 followers in total, 16 per caller: a follower costs a goroutine
//     and a read of the log per change, and a client rarely needs more
//     than a few streams (one per copy it keeps); 16 callers with their
//     full share still leave room.
//   - 16 imports in total, 2 per caller: an import keeps up to 256
//     creates of its own in flight, which keeps the store's batches full;
//     a few at once already go at the store's speed, more only queue.
var DefaultLimits = Limits{
	ReadHeaderTimeout:     5 * time.Second,
	ReadTimeout:           30 * time.Second,
	WriteTimeout:          40 * time.Second,
	IdleTimeout:           120 * time.Second,
	MaxHeaderBytes:        64 << 10,
	MaxConcurrentRequests: 256,
	MaxFollowers:          256,
	MaxFollowersPerCaller: 16,
	MaxImports:            16,
	MaxImportsPerCaller:   2,
}
