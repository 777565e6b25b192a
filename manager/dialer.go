package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// errNotReusable is wrapped by every error Dialer.Recycle returns; it
// matches ErrBroken.
var errNotReusable error = &brokenError{"manager: connection not reusable"}

// brokenError is an error of its own that also matches ErrBroken.
type brokenError struct{ msg string }

func (e *brokenError) Error() string { return e.msg }
func (e *brokenError) Unwrap() error { return ErrBroken }

// errNilConn is what Recycle returns for a nil conn.
var errNilConn = fmt.Errorf("%w: nil connection", errNotReusable)

// Dialer is a [Manager] for stream sockets: TCP ("tcp", "tcp4", "tcp6") and
// Unix ("unix"). Connect dials with a [net.Dialer], Recycle clears the
// connection's deadlines and checks without blocking that it is still open
// and has nothing unread, and Close closes it.
//
// A connection to a peer that vanished without closing it (a network
// partition, a host that went down) shows nothing to Recycle: a client with
// no deadline of its own then waits on it for as long as the operating
// system retransmits (minutes). KeepAliveConfig and UserTimeout make such a
// connection fail by itself: keep-alive probes that go unanswered, or data
// left unacknowledged for UserTimeout, end it with an error (ETIMEDOUT).
//
// The zero KeepAlive means net.Dialer's default. The fields are
// read, never written, by the methods; a Dialer is safe for concurrent use
// as long as nobody changes its fields once a pool holds it. The pool never
// calls Recycle or Close for the same connection concurrently.
type Dialer struct {
	// Network is "tcp", "tcp4", "tcp6" or "unix". Required.
	Network string
	// Address is what net.Dial takes for Network: "host:port", or a socket
	// path. Required.
	Address string
	// KeepAlive is the TCP keep-alive period (net.Dialer.KeepAlive): zero
	// means Go's default (enabled), negative disables keep-alives. Ignored
	// for Unix sockets.
	KeepAlive time.Duration
	// KeepAliveConfig, when its Enable is set, sets the TCP keep-alive
	// probes in full (net.Dialer.KeepAliveConfig): the idle time before the
	// first probe, the interval between probes, and how many may go
	// unanswered before the connection fails; zero fields mean Go's
	// defaults (15 s, 15 s, 9), negative ones the system's. It takes
	// precedence over KeepAlive. Ignored for Unix sockets.
	KeepAliveConfig net.KeepAliveConfig
	// UserTimeout sets TCP_USER_TIMEOUT: how long data sent may stay
	// unacknowledged (or keep-alive probes unanswered) before the
	// connection is closed with ETIMEDOUT. Zero leaves the system's
	// behaviour (retransmissions for about 15 minutes); negative is
	// invalid. Linux only: elsewhere it is ignored. Ignored for Unix
	// sockets.
	UserTimeout time.Duration
}

var _ Manager[net.Conn] = Dialer{}

// validate reports the first bad field of d.
func (d Dialer) validate() error {
	switch d.Network {
	case "tcp", "tcp4", "tcp6", "unix":
	case "":
		return errors.New("manager: Dialer.Network is empty")
	default:
		return fmt.Errorf("manager: Dialer.Network %q is not a stream socket network (want tcp, tcp4, tcp6 or unix)", d.Network)
	}
	if d.Address == "" {
		return errors.New("manager: Dialer.Address is empty")
	}
	if d.UserTimeout < 0 {
		return fmt.Errorf("manager: Dialer.UserTimeout %v is negative", d.UserTimeout)
	}
	return nil
}

// Connect dials d.Address; ctx bounds the dial (its deadline, which a pool's
// ConnectTimeout sets, and its cancellation). It returns an error naming the field if d
// is invalid (see the fields), else net.Dialer.DialContext's result. A dial
// error (a *net.OpError: errors.As finds it) is returned as is, except that a
// dial that ran out of time by ctx's deadline returns an
// error that always matches [context.DeadlineExceeded] (and is a net.Error
// whose Timeout is true); net reports some of these as os.ErrDeadlineExceeded
// alone. A dial cut short by ctx's cancellation matches [context.Canceled].
func (d Dialer) Connect(ctx context.Context) (net.Conn, error) {
	if err := d.validate(); err != nil {
		return nil, err
	}
	nd := net.Dialer{KeepAlive: d.KeepAlive, KeepAliveConfig: d.KeepAliveConfig}
	if d.UserTimeout > 0 {
		nd.Control = userTimeout(d.UserTimeout)
	}
	conn, err := nd.DialContext(ctx, d.Network, d.Address)
	if err != nil {
		// Which of the socket's write deadline and the context's timer
		// fires first decides whether net says os.ErrDeadlineExceeded or
		// context.DeadlineExceeded; make it match the latter either way.
		if errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", err, context.DeadlineExceeded)
		}
		return nil, err
	}
	return conn, nil
}

// Recycle reports whether conn can be handed out again, without blocking and
// without consuming anything. It first clears conn's read and write
// deadlines (SetDeadline with the zero time), so that a healthy connection
// whose last user left a deadline behind, now past, is reusable and its next
// user starts without one; then, on Unix, it peeks at one byte of the socket
// with MSG_PEEK|MSG_DONTWAIT. A connection with nothing to read is reusable
// (nil).
// One the peer has closed returns an error matching [ErrBroken] and io.EOF;
// one with unread bytes (a reply nobody read: the protocol is out of step)
// or a socket error (reset by the peer, closed locally) returns an error
// matching ErrBroken (and the socket error: a syscall.Errno such as
// ECONNRESET, or net.ErrClosed). A connection found closed or unclean is
// thus closed by the pool even when the acquirer's context has ended. ctx
// and m are not consulted.
//
// Only a connection that implements syscall.Conn (as *net.TCPConn and
// *net.UnixConn, which Connect returns, do) can be checked. Any other — a
// *tls.Conn, net.Pipe, a wrapper — passes as reusable: its failure shows on
// first use instead. (Peeking at the socket under a *tls.Conn would be wrong:
// TLS 1.3 servers send session tickets that the client reads only on its
// next Read, so a healthy connection would look out of step; and a check by a
// read with a deadline would consume application data.) On platforms other
// than Unix (and on AIX) every connection passes.
//
// A Recycle of a healthy *net.TCPConn or *net.UnixConn does not allocate.
func (Dialer) Recycle(ctx context.Context, conn net.Conn, m Metrics) error {
	if conn == nil {
		return errNilConn
	}
	// A past deadline would make the peek (and the next user's I/O) fail
	// with os.ErrDeadlineExceeded on a healthy connection.
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return fmt.Errorf("%w: %w", errNotReusable, err)
	}
	return peek(conn)
}

// Close closes conn. A nil conn is a no-op.
func (Dialer) Close(conn net.Conn) error {
	if conn == nil {
		return nil
	}
	return conn.Close()
}
