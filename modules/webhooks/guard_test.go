package webhooks

import (
	"net/netip"
	"strings"
	"testing"
)

func TestInternalAddressesAreRefused(t *testing.T) {
	refused := []string{
		"127.0.0.1", "127.255.0.9", "::1", // loopback
		"10.1.2.3", "172.16.0.1", "192.168.1.1", // private
		"fc00::1", "fd12:3456::1", // unique-local
		"169.254.169.254", "fe80::1", // link-local, the cloud metadata address among them
		"100.64.0.1", "100.127.255.254", // carrier-grade NAT
		"::ffff:127.0.0.1", "::ffff:8.8.8.8", // IPv4-mapped
		"0.0.0.0", "::", "0.1.2.3", // unspecified, "this network"
		"224.0.0.1", "ff02::1", // multicast
		"255.255.255.255", "240.0.0.1", "198.18.0.1", "192.0.0.8",
		"64:ff9b::7f00:1", "2002:7f00:1::1", // IPv4 in NAT64 and 6to4 disguise
	}
	for _, a := range refused {
		if why := internal(netip.MustParseAddr(a)); why == "" {
			t.Errorf("%s: allowed, want refused", a)
		}
	}
	for _, a := range []string{"8.8.8.8", "1.1.1.1", "100.63.255.255", "100.128.0.0", "2606:4700::1111", "172.32.0.1"} {
		if why := internal(netip.MustParseAddr(a)); why != "" {
			t.Errorf("%s: refused as %s, want allowed", a, why)
		}
	}
}

func TestDialGuardNamesTheAddressAndTheFlag(t *testing.T) {
	err := dialGuard("tcp", "[::1]:443", nil)
	if err == nil || !strings.Contains(err.Error(), "::1 is a loopback address") || !strings.Contains(err.Error(), "--webhooks-allow-private") {
		t.Fatalf("dialGuard(::1) = %v", err)
	}
	if err := dialGuard("tcp", "93.184.216.34:443", nil); err != nil {
		t.Fatalf("dialGuard(public) = %v", err)
	}
}
