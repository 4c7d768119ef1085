package httpserver

import "github.com/plantstore/plantstore/modules/httpserver/httpapi"

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
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = d.ReadHeaderTimeout
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = d.ReadTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = d.WriteTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = d.IdleTimeout
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	if l.MaxConcurrentRequests <= 0 {
		l.MaxConcurrentRequests = d.MaxConcurrentRequests
	}
	if l.MaxFollowers <= 0 {
		l.MaxFollowers = d.MaxFollowers
	}
	if l.MaxFollowersPerCaller <= 0 {
		l.MaxFollowersPerCaller = d.MaxFollowersPerCaller
	}
	if l.MaxImports <= 0 {
		l.MaxImports = d.MaxImports
	}
	if l.MaxImportsPerCaller <= 0 {
		l.MaxImportsPerCaller = d.MaxImportsPerCaller
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections()
	}
	return l
}
