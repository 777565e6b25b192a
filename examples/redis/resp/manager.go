package resp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/poolkit/poolkit/manager"
)

// DefaultPingAfter is Manager.PingAfter's default.
const DefaultPingAfter = time.Second

// Manager is a manager.Manager[*Conn] for one Redis server. Connect dials and
// names the connection; Recycle checks it before each reuse; Close closes it.
// Its fields are read, never written, by the methods: do not change them once
// a pool holds the Manager. It is safe for concurrent use.
type Manager struct {
	// Addr is the server's host:port. Required.
	Addr string
	// Name, if not empty, is given to each connection with CLIENT SETNAME
	// (so that CLIENT LIST and CLIENT KILL can find them). No spaces.
	Name string
	// DialTimeout bounds the dial and the CLIENT SETNAME, on top of the
	// pool's connect timeout. 0: no bound of its own.
	DialTimeout time.Duration
	// PingAfter: Recycle sends a PING to a connection idle at least this
	// long. 0: DefaultPingAfter; negative: never.
	PingAfter time.Duration
}

var _ manager.Manager[*Conn] = Manager{}

// Connect dials m.Addr under ctx and, if m.Name is set, names the
// connection. It returns the dial error as net returns it (a *net.OpError),
// or the CLIENT SETNAME error (after closing the connection).
func (m Manager) Connect(ctx context.Context) (*Conn, error) {
	if m.Addr == "" {
		return nil, errors.New("resp: Manager.Addr is empty")
	}
	if m.DialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.DialTimeout)
		defer cancel()
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", m.Addr)
	if err != nil {
		return nil, err
	}
	c := NewConn(nc)
	if m.Name != "" {
		if _, err := c.Do(ctx, "CLIENT", "SETNAME", m.Name); err != nil {
			nc.Close()
			return nil, fmt.Errorf("resp: CLIENT SETNAME %s: %w", m.Name, err)
		}
	}
	return c, nil
}

// Recycle reports whether c may be handed out again. A broken c fails. Then
// a non-blocking peek at the socket (manager.Dialer.Recycle) rejects a
// connection the server has closed (CLIENT KILL, a restart, timeout) or one
// with unread bytes; it costs one system call and no round trip. Last, a
// connection idle for at least PingAfter (by met.LastUsed, which the pool
// records on a coarse clock, so "idle" may be overestimated by up to the
// pool's tick) must answer a PING under ctx.
func (m Manager) Recycle(ctx context.Context, c *Conn, met manager.Metrics) error {
	if c.Broken() {
		return fmt.Errorf("%w: %w", ErrBroken, c.broken)
	}
	if err := (manager.Dialer{}).Recycle(ctx, c.nc, met); err != nil {
		return err
	}
	after := m.PingAfter
	if after == 0 {
		after = DefaultPingAfter
	}
	if after > 0 && time.Since(met.LastUsed) >= after {
		return pong(c.Do(ctx, "PING"))
	}
	return nil
}

// Close closes c.
func (Manager) Close(c *Conn) error { return c.Close() }
