//go:build unix && !aix

package manager

import (
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// Errors of a failed peek, built once so that returning them does not
// allocate.
var (
	errPeerClosed = fmt.Errorf("%w: closed by the peer: %w", errNotReusable, io.EOF)
	errUnreadData = fmt.Errorf("%w: unread data pending (the protocol is out of step)", errNotReusable)
)

// peek implements Dialer.Recycle on Unix: a one-byte recv with
// MSG_PEEK|MSG_DONTWAIT, which neither blocks nor consumes. EAGAIN means the
// connection is open with nothing to read; 0 bytes means end of stream; a
// byte means unread data; any other error means the socket is broken.
func peek(conn net.Conn) error {
	// Each concrete case has its own rc and p so that the compiler, having
	// inlined SyscallConn, knows rc's dynamic type and devirtualizes
	// rc.Read; then neither the raw conn nor p (whose method value is the
	// callback) escapes, and a check does not allocate
	// (TestDialerRecycleDoesNotAllocate). Through the syscall.Conn interface
	// both escape: a few small allocations per check.
	switch c := conn.(type) {
	case *net.TCPConn:
		var p peeker
		rc, err := c.SyscallConn()
		if err == nil {
			err = rc.Read(p.recv)
		}
		return p.verdict(err)
	case *net.UnixConn:
		var p peeker
		rc, err := c.SyscallConn()
		if err == nil {
			err = rc.Read(p.recv)
		}
		return p.verdict(err)
	case syscall.Conn:
		return peekSyscallConn(c)
	default:
		return nil // cannot be checked; see Dialer.Recycle
	}
}

// peekSyscallConn is peek for a syscall.Conn of another type.
func peekSyscallConn(c syscall.Conn) error {
	var p peeker
	rc, err := c.SyscallConn()
	if err == nil {
		err = rc.Read(p.recv)
	}
	return p.verdict(err)
}

// peeker is the state of one peek; its recv method is the RawConn.Read
// callback.
type peeker struct {
	buf [1]byte
	n   int
	err error
}

// recv peeks at one byte of the socket fd without blocking. It always
// returns true: RawConn.Read must not wait for the socket to become readable.
func (p *peeker) recv(fd uintptr) bool {
	for {
		p.n, _, p.err = syscall.Recvfrom(int(fd), p.buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if p.err != syscall.EINTR {
			return true
		}
	}
}

// verdict turns the outcome of a peek into Recycle's result; err is what
// SyscallConn or RawConn.Read returned.
func (p *peeker) verdict(err error) error {
	switch {
	case err != nil: // closed locally, or not a pollable socket
		return fmt.Errorf("%w: %w", errNotReusable, err)
	case p.err == syscall.EAGAIN || p.err == syscall.EWOULDBLOCK:
		return nil
	case p.err != nil:
		return fmt.Errorf("%w: %w", errNotReusable, os.NewSyscallError("recvfrom", p.err))
	case p.n == 0:
		return errPeerClosed
	default:
		return errUnreadData
	}
}
