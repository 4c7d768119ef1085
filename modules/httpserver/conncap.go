package httpserver

import (
	"math"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"
)

// Capping the API listener's open connections: each one holds a file
// descriptor, and when the process runs out of them accept fails ("too many
// open files"), and so does everything else that needs one: the admin
// listener's probes, the store's files and connections, the log. A client
// needs no token to open connections, so without a cap anyone who reaches
// the port can make Kubernetes restart a healthy pod.
//
// Over the cap the listener stops accepting (netutil.LimitListener): new
// connections wait in the kernel's accept queue (its length is the
// net.core.somaxconn sysctl) and are served as others close, rather than
// being refused. The admin listener is not capped: it is cluster-internal,
// and it must answer while the API is full.

// The default cap is the file limit minus a reserve for everything else
// that holds descriptors: the admin listener and its connections, the
// store (bolt's file, or --postgres-max-conns connections), the tracing
// exporter's connections, stdout and the runtime's own (epoll, pipes).
const (
	// minReservedFiles is the reserve under a small file limit: a few
	// dozen descriptors are all the rest of the process uses at the
	// default --postgres-max-conns.
	minReservedFiles = 128
	// reservedFilesDivisor: a tenth of a larger limit is kept back, for a
	// larger --postgres-max-conns and headroom.
	reservedFilesDivisor = 10
	// minMaxConnections is the floor of the default, for a file limit too
	// small to leave anything after the reserve.
	minMaxConnections = 16
)

// DefaultMaxConnections is the --max-connections of a Limits that leaves
// it zero: derived from the process's file limit (RLIMIT_NOFILE; Go raises
// the soft limit to the hard one at start), as maxConnectionsFor says.
func DefaultMaxConnections() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return maxConnectionsFor(1024) // the usual soft limit
	}
	return maxConnectionsFor(rl.Cur)
}

// maxConnectionsFor is the default cap under a file limit of nofile:
// nofile − max(128, nofile/10), at least 16.
func maxConnectionsFor(nofile uint64) int {
	reserve := max(minReservedFiles, nofile/reservedFilesDivisor)
	if nofile < reserve+minMaxConnections {
		return minMaxConnections
	}
	return int(min(nofile-reserve, math.MaxInt32)) // RLIM_INFINITY is 2⁶⁴−1
}

// connectionCap caps and counts the API listener's connections.
type connectionCap struct {
	max  int
	open atomic.Int64
}

func newConnectionCap(max int) *connectionCap { return &connectionCap{max: max} }

// limit returns ln accepting at most the cap's connections at once.
func (c *connectionCap) limit(ln net.Listener) net.Listener {
	return netutil.LimitListener(ln, c.max)
}

// track is the server's ConnState hook, counting open connections for the
// metric.
func (c *connectionCap) track(_ net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		c.open.Add(1)
	case http.StateClosed, http.StateHijacked:
		c.open.Add(-1)
	}
}

// registerConnectionMetrics exports the API listener's open connections
// and their cap, to alert before the cap is reached.
func registerConnectionMetrics(s *Servers, reg prometheus.Registerer) error {
	open := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "plantstore_http_open_connections",
		Help: "Connections open on the API listener, out of plantstore_http_max_connections.",
	}, func() float64 { return float64(s.conns.open.Load()) })
	capacity := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "plantstore_http_max_connections",
		Help: "The cap on the API listener's open connections (--max-connections); over it new connections wait in the kernel's accept queue.",
	}, func() float64 { return float64(s.conns.max) })
	for _, c := range []prometheus.Collector{open, capacity} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
