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
// the link, delay it or reset its connections.
type FaultProxy struct {
	proxy *toxiproxy.Proxy
}

// NewFaultProxy listens on a free loopback port and forwards to upstream
// (host:port).
func NewFaultProxy(name, upstream string) (*FaultProxy, error) {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, err
	}
	return &FaultProxy{proxy: p}, nil
}

// Addr is the proxy's listen address, the replica's database address.
func (f *FaultProxy) Addr() string { return f.proxy.Listen }

// Cut closes every connection through the proxy and refuses new ones: the
// replica is partitioned from the database.
func (f *FaultProxy) Cut() { f.proxy.Stop() }

// Heal listens again (on the same address) after Cut.
func (f *FaultProxy) Heal() error { return f.proxy.Start() }

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
func (f *FaultProxy) Clear() { f.proxy.Toxics.ResetToxics(context.Background()) }

// Close stops the proxy for good.
func (f *FaultProxy) Close() { f.proxy.Stop() }

func (f *FaultProxy) add(toxic string) error {
	_, err := f.proxy.Toxics.AddToxicJson(strings.NewReader(toxic))
	return err
}
