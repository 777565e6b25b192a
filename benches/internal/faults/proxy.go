package faults

import (
	"net"
	"sync"
	"sync/atomic"
)

// gate is open or shut; a shut gate holds whoever waits on it until it
// opens. The zero gate is not usable: see newGate.
type gate struct {
	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
}

func newGate() *gate {
	g := &gate{open: make(chan struct{})}
	close(g.open)
	return g
}

// wait returns once the gate is open, or when done is closed (false).
func (g *gate) wait(done <-chan struct{}) bool {
	g.mu.Lock()
	ch := g.open
	g.mu.Unlock()
	select {
	case <-ch:
		return true
	case <-done:
		return false
	}
}

// shut holds every wait from now on until reopen.
func (g *gate) shut() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
		g.open = make(chan struct{})
	default: // already shut
	}
}

// reopen releases the waits.
func (g *gate) reopen() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.open:
	default:
		close(g.open)
	}
}

// holdProxy forwards TCP connections from its listener to upstream and
// can partition them: while partitioned it passes no byte either way and
// dials no new connection upstream, but closes nothing and drops nothing;
// once healed it delivers what it held, as TCP does after a partition
// shorter than its retransmission timeout. It counts the connections open
// upstream, the connections the server sees.
type holdProxy struct {
	ln       net.Listener
	upstream string
	gate     *gate
	done     chan struct{} // closed by Close
	wg       sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{} // every open connection, both sides; guarded by mu

	open, most atomic.Int64 // upstream connections open now, and the most at once
}

// listenHold starts a hold proxy on a free port of the loopback in front of
// upstream (host:port).
func listenHold(upstream string) (*holdProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &holdProxy{ln: ln, upstream: upstream, gate: newGate(), done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *holdProxy) Addr() string { return p.ln.Addr().String() }

// Partition stops every byte and every new upstream connection.
func (p *holdProxy) Partition() { p.gate.shut() }

// Heal lets them through again.
func (p *holdProxy) Heal() { p.gate.reopen() }

// MostConns is the most upstream connections open at once so far.
func (p *holdProxy) MostConns() int { return int(p.most.Load()) }

// Close stops the proxy and closes every connection through it.
func (p *holdProxy) Close() {
	close(p.done)
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *holdProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(c) {
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// track adds c to the open connections, or closes it and returns false if
// the proxy is closing.
func (p *holdProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		_ = c.Close()
		return false
	default:
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *holdProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

// serve dials upstream for the client c once the gate is open, then copies
// both ways until either side ends, and closes both.
func (p *holdProxy) serve(c net.Conn) {
	defer p.untrack(c)
	if !p.gate.wait(p.done) {
		return
	}
	up, err := net.Dial("tcp", p.upstream)
	if err != nil || !p.track(up) {
		return
	}
	n := p.open.Add(1)
	for m := p.most.Load(); n > m && !p.most.CompareAndSwap(m, n); m = p.most.Load() {
	}
	// The connection ends for the count when either side ends it, before
	// the proxy closes the other: a client that sees its connection closed
	// and dials another never finds the old one still counted.
	var once sync.Once
	end := func() { once.Do(func() { p.open.Add(-1) }) }
	defer p.untrack(up)
	var wg sync.WaitGroup
	wg.Go(func() { p.pipe(up, c); end(); _ = up.Close() })
	p.pipe(c, up)
	end()
	_ = c.Close()
	wg.Wait()
}

// pipe copies from src to dst, waiting at the gate before each read and
// before each write, so that a partition holds what was read before it.
func (p *holdProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for p.gate.wait(p.done) {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate.wait(p.done) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or a closed connection: either way, done
			return
		}
	}
}
