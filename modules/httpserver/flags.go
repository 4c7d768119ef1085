package httpserver

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"time"
)

// RegisterFlags defines the listeners' flags on fs, each filling its field
// of c with its default.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "http-addr", ":8080", "API listen address")
	fs.StringVar(&c.AdminAddr, "admin-addr", ":9090", "admin listen address (probes, metrics; keep it cluster-internal)")
	fs.DurationVar(&c.DrainDelay, "drain-delay", 5*time.Second, "how long the API keeps serving after SIGTERM while readiness is 503")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 20*time.Second, "how long in-flight requests get after the drain")
	l, d := &c.Limits, DefaultLimits
	fs.DurationVar(&l.ReadHeaderTimeout, "read-header-timeout", d.ReadHeaderTimeout, "how long a client has to send a request's headers")
	fs.DurationVar(&l.ReadTimeout, "read-timeout", d.ReadTimeout, "how long a client has to send a whole request, body included")
	fs.DurationVar(&l.WriteTimeout, "write-timeout", d.WriteTimeout, "how long from a request's headers to the end of its answer")
	fs.DurationVar(&l.IdleTimeout, "idle-timeout", d.IdleTimeout, "how long a keep-alive connection may wait for its next request")
	fs.IntVar(&l.MaxHeaderBytes, "max-header-bytes", d.MaxHeaderBytes, "largest accepted request line and headers in bytes")
	fs.IntVar(&l.MaxConcurrentRequests, "max-concurrent-requests", d.MaxConcurrentRequests, "authenticated API requests served at once; more are answered 503")
	fs.IntVar(&l.MaxFollowers, "max-followers", d.MaxFollowers, "change streams and long polls open at once, in total; they hold no --max-concurrent-requests slot; more are answered 503")
	fs.IntVar(&l.MaxFollowersPerCaller, "max-followers-per-token", d.MaxFollowersPerCaller, "change streams and long polls one token may have open at once; more are answered 429")
	fs.IntVar(&l.MaxImports, "max-imports", d.MaxImports, "bulk import streams open at once, in total; they hold no --max-concurrent-requests slot; more are answered 503")
	fs.IntVar(&l.MaxImportsPerCaller, "max-imports-per-token", d.MaxImportsPerCaller, "bulk import streams one token may have open at once; more are answered 429")
	fs.IntVar(&l.MaxConnections, "max-connections", d.MaxConnections, "API connections open at once; more wait in the kernel's accept queue. 0 derives it from the file limit: limit - max(128, limit/10), at least 16")
	fs.BoolVar(&c.Pprof, "pprof", false, "serve Go's profiles on the admin listener: /debug/pprof/profile (CPU), /debug/pprof/heap, goroutine, allocs, block, mutex, threadcreate (no index page)")
}

// Validate reports every value of c that its flag does not accept, one
// error per problem, each naming the flag (errors.Join's parts).
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, a ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, a...))
		}
	}
	for _, addr := range []struct{ flag, value string }{{"http-addr", c.Addr}, {"admin-addr", c.AdminAddr}} {
		_, port, err := net.SplitHostPort(addr.value)
		check(err == nil && port != "", "--%s %q: want host:port, e.g. :8080", addr.flag, addr.value)
	}
	// Two listeners on port 0 get two different ports: only then may the
	// addresses be equal.
	_, port, _ := net.SplitHostPort(c.Addr)
	check(c.Addr != c.AdminAddr || port == "0", "--http-addr and --admin-addr must differ")
	check(c.DrainDelay >= 0, "--drain-delay %v: must not be negative", c.DrainDelay)
	check(c.ShutdownTimeout > 0, "--shutdown-timeout %v: must be positive", c.ShutdownTimeout)
	l := c.Limits
	check(l.ReadHeaderTimeout > 0, "--read-header-timeout %v: must be positive", l.ReadHeaderTimeout)
	check(l.ReadTimeout > 0, "--read-timeout %v: must be positive", l.ReadTimeout)
	check(l.WriteTimeout > 0, "--write-timeout %v: must be positive", l.WriteTimeout)
	check(l.IdleTimeout > 0, "--idle-timeout %v: must be positive", l.IdleTimeout)
	check(l.MaxHeaderBytes > 0, "--max-header-bytes %d: must be positive", l.MaxHeaderBytes)
	check(l.MaxConcurrentRequests > 0, "--max-concurrent-requests %d: must be positive", l.MaxConcurrentRequests)
	check(l.MaxFollowers > 0, "--max-followers %d: must be positive", l.MaxFollowers)
	check(l.MaxFollowersPerCaller > 0, "--max-followers-per-token %d: must be positive", l.MaxFollowersPerCaller)
	check(l.MaxImports > 0, "--max-imports %d: must be positive", l.MaxImports)
	check(l.MaxImportsPerCaller > 0, "--max-imports-per-token %d: must be positive", l.MaxImportsPerCaller)
	check(l.MaxConnections >= 0, "--max-connections %d: must not be negative (0 derives it from the file limit)", l.MaxConnections)
	return errors.Join(errs...)
}
