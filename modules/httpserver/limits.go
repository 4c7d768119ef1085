package httpserver

import (
	"time"

	"github.com/plantstore/plantstore/modules/httpserver/httpapi"
)

// Limits are the listeners' limits (httpapi.Limits, where the modules that
// need them find them).
type Limits = httpapi.Limits

// DefaultLimits are the limits of a server whose Config leaves them zero,
// and the flags' defaults (httpapi.DefaultLimits).
var DefaultLimits = httpapi.DefaultLimits

// withDefaults returns l with every zero field set to its default, so that
// a Config built in code (tests, other programs) is never unlimited.
func withDefaults(l Limits) Limits {
	d := DefaultLimits
	orDefault(&l.ReadHeaderTimeout, d.ReadHeaderTimeout)
	orDefault(&l.ReadTimeout, d.ReadTimeout)
	orDefault(&l.WriteTimeout, d.WriteTimeout)
	orDefault(&l.IdleTimeout, d.IdleTimeout)
	orDefault(&l.MaxHeaderBytes, d.MaxHeaderBytes)
	orDefault(&l.MaxConcurrentRequests, d.MaxConcurrentRequests)
	orDefault(&l.MaxFollowers, d.MaxFollowers)
	orDefault(&l.MaxFollowersPerCaller, d.MaxFollowersPerCaller)
	orDefault(&l.MaxImports, d.MaxImports)
	orDefault(&l.MaxImportsPerCaller, d.MaxImportsPerCaller)
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections() // depends on the process's file limit
	}
	return l
}

// orDefault sets *v to d when *v is zero or negative (unset).
func orDefault[T int | time.Duration](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}
