package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// latencyProxy is a toxiproxy proxy in front of a server, through which the
// latency fault delays every reply.
type latencyProxy struct {
	proxy *toxiproxy.Proxy
}

// toxicName names the latency toxic.
const toxicName = "poolbench-latency"

// listenLatency starts a toxiproxy proxy on a free port of the loopback in
// front of upstream.
func listenLatency(upstream string) (*latencyProxy, error) {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "poolbench", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("toxiproxy: %w", err)
	}
	return &latencyProxy{proxy: p}, nil
}

// Addr is the proxy's host:port.
func (p *latencyProxy) Addr() string { return p.proxy.Listen }

// Add delays every chunk from the server to the client by d.
func (p *latencyProxy) Add(d time.Duration) error {
	js := fmt.Sprintf(`{"name": %q, "type": "latency", "stream": "downstream", "attributes": {"latency": %d}}`,
		toxicName, d.Milliseconds())
	_, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(js))
	return err
}

// Remove takes the delay away.
func (p *latencyProxy) Remove() error {
	return p.proxy.Toxics.RemoveToxic(context.Background(), toxicName)
}

// Close stops the proxy and closes its connections.
func (p *latencyProxy) Close() { p.proxy.Stop() }
