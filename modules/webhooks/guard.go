package webhooks

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
)

// Webhook URLs are chosen by whoever writes the file, and a sender that
// follows them can be steered at the cluster's own services (SSRF). The
// address is checked as the socket connects, after DNS resolution, so a
// name that resolves to a public address when the file is read and to an
// internal one later (DNS rebinding) is still refused.

// internalPrefixes are the destinations refused without
// --webhooks-allow-private, beyond what netip's predicates name
// (loopback, private, link-local, multicast, unspecified).
var internalPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),      // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),  // carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),   // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),  // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),    // reserved, and broadcast
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64: an IPv4 address in disguise
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64
	netip.MustParsePrefix("2002::/16"),      // 6to4: an IPv4 address in disguise
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
}

// internal reports why addr is not a public unicast address, or "".
func internal(addr netip.Addr) string {
	switch {
	case addr.Is4In6():
		return "an IPv4-mapped IPv6 address"
	case addr.IsLoopback():
		return "a loopback address"
	case addr.IsPrivate():
		return "a private address"
	case addr.IsLinkLocalUnicast(), addr.IsLinkLocalMulticast():
		return "a link-local address"
	case addr.IsMulticast(), addr.IsInterfaceLocalMulticast():
		return "a multicast address"
	case addr.IsUnspecified():
		return "an unspecified address"
	}
	for _, p := range internalPrefixes {
		if p.Contains(addr) {
			return "a reserved or internal address"
		}
	}
	return ""
}

// dialGuard is a net.Dialer's Control: it refuses a connection to an
// internal address before it is made.
func dialGuard(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhook destination %q: %w", address, err)
	}
	if why := internal(ap.Addr()); why != "" {
		return &refusedError{addr: ap.Addr(), why: why}
	}
	return nil
}

// refusedError is a destination the guard refused; an attempt that meets
// it fails as "refused" in the metrics.
type refusedError struct {
	addr netip.Addr
	why  string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("webhook destination %s is %s (refused; --webhooks-allow-private allows it)", e.addr, e.why)
}

// newDialer returns the dialer of webhook attempts.
func newDialer(allowPrivate bool) *net.Dialer {
	d := &net.Dialer{}
	if !allowPrivate {
		d.Control = dialGuard
	}
	return d
}
