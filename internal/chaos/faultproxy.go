package chaos

import (
	"context"
	"fmt"
	"strings"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// FaultProxy is one replica's link to PostgreSQL: a Toxiproxy proxy run in
// this process (no API server; the nemesis calls it directly) that can cut
// the link, delay it or reset its connections. A link to a highly
// available database is one proxy per node; the faults act on all of them,
// or on one node's through Node.
type FaultProxy struct {
	proxies []*toxiproxy.Proxy
}

// NewFaultProxy listens on a free loopback port per upstream (host:port)
// and forwards to it.
func NewFaultProxy(name string, upstreams ...string) (*FaultProxy, error) {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	f := &FaultProxy{}
	for i, up := range upstreams {
		p := toxiproxy.NewProxy(srv, fmt.Sprintf("%s-%d", name, i), "127.0.0.1:0", up)
		if err := p.Start(); err != nil {
			f.Close()
			return nil, err
		}
		f.proxies = append(f.proxies, p)
	}
	return f, nil
}

// Addr is the (first) proxy's listen address, the replica's database
// address.
func (f *FaultProxy) Addr() string { return f.proxies[0].Listen }

// Addrs are the listen addresses, one per upstream.
func (f *FaultProxy) Addrs() []string {
	out := make([]string, len(f.proxies))
	for i, p := range f.proxies {
		out[i] = p.Listen
	}
	return out
}

// Node is the link to the k-th upstream alone.
func (f *FaultProxy) Node(k int) *FaultProxy { return &FaultProxy{proxies: f.proxies[k : k+1]} }

// Cut closes every connection through the proxy and refuses new ones: the
// replica is partitioned from the database.
func (f *FaultProxy) Cut() {
	for _, p := range f.proxies {
		p.Stop()
	}
}

// Heal listens again (on the same address) after Cut.
func (f *FaultProxy) Heal() error {
	for _, p := range f.proxies {
		if err := p.Start(); err != nil {
			return err
		}
	}
	return nil
}

// Latency adds ms milliseconds (with a tenth of that as jitter) to every
// chunk of data from the database.
func (f *FaultProxy) Latency(ms int) error {
	return f.add(fmt.Sprintf(`{"name":"latency","type":"latency","stream":"downstream","attributes":{"latency":%d,"jitter":%d}}`, ms, ms/10))
}

// Reset resets (TCP RST) every connection through the proxy as soon as it
// carries data, until Clear: each query the replica sends in that time
// meets a reset connection.
func (f *FaultProxy) Reset() error {
	return f.add(`{"name":"reset","type":"reset_peer","stream":"upstream","attributes":{"timeout":0}}`)
}

// Blackhole drops every byte both ways, on the connections open and on new
// ones (which the proxy still accepts), until Clear: a network partition.
func (f *FaultProxy) Blackhole() error {
	if err := f.add(`{"name":"blackhole-up","type":"timeout","stream":"upstream","attributes":{"timeout":0}}`); err != nil {
		return err
	}
	return f.add(`{"name":"blackhole-down","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`)
}

// Clear removes every toxic.
func (f *FaultProxy) Clear() {
	for _, p := range f.proxies {
		p.Toxics.ResetToxics(context.Background())
	}
}

// Close stops the proxy for good.
func (f *FaultProxy) Close() { f.Cut() }

func (f *FaultProxy) add(toxic string) error {
	for _, p := range f.proxies {
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
			return err
		}
	}
	return nil
}
