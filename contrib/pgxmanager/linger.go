package pgxmanager

import (
	"context"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// A pool frees a connection's slot when Manager.Close returns, and the
// server must never hold more of the pool's connections than MaxSize. But a
// backend outlives its client's close: it exits only after it has read the
// Terminate message (or the end of the stream), and until then it holds one
// of the server's max_connections and shows in pg_stat_activity.
// PostgreSQL keeps a backend's socket open until the process has exited,
// "so that clients can perform a synchronous close" (pqcomm.c), so the
// server's end of the stream is the sign that the backend is gone.
//
// pgconn closes its socket right after the Terminate message, so the
// Manager keeps a second descriptor of the socket (a *lingering* one),
// taken before pgconn closes its own: the socket stays open after pgconn's
// close, and the Manager ends it itself. It half-closes it (the end of the
// stream, for a backend that never got a Terminate: a connection pgconn
// closed on an error), reads and discards whatever the server still sends
// until the server closes its end, or until a deadline, and then closes it.
// The connection's own descriptor is never touched by this, nor its
// deadlines, which pgconn sets from goroutines of its own.

// dupSocket returns a second descriptor of nc's socket (under TLS, of the
// socket under it) as a net.Conn of its own, or nil where there is none to
// take: a net.Conn that is not a syscall.Conn (a user's DialFunc may return
// any), or one already closed.
func dupSocket(nc net.Conn) net.Conn {
	if tc, ok := nc.(interface{ NetConn() net.Conn }); ok { // TLS
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	if rc.Control(func(s uintptr) { fd, err = syscall.Dup(int(s)) }) != nil || err != nil || fd < 0 {
		return nil
	}
	f := os.NewFile(uintptr(fd), "")
	dup, err := net.FileConn(f) // a descriptor of its own, in the runtime's poller
	_ = f.Close()
	if err != nil {
		return nil
	}
	return dup
}

// linger ends the stream of dup, a second descriptor of a socket whose
// other descriptors are closed or about to be, waits until the server has
// closed its end or deadline has passed, and closes dup. It reports whether
// the server let go in time; a nil dup (no descriptor could be taken)
// reports true, there being nothing to wait on.
func linger(dup net.Conn, deadline time.Time) (letGo bool) {
	if dup == nil {
		return true
	}
	defer dup.Close()
	if hc, ok := dup.(interface{ CloseWrite() error }); ok {
		_ = hc.CloseWrite()
	}
	if dup.SetReadDeadline(deadline) != nil {
		return false
	}
	var buf [512]byte
	for {
		_, err := dup.Read(buf[:])
		if err != nil {
			return !os.IsTimeout(err)
		}
	}
}

// dialLingering returns dial (nil: pgconn's default, a net.Dialer) made
// to keep a lingering descriptor of the socket it dials last, until the
// connect's end calls connected: it returns that descriptor, for the
// connect to linger on if it failed or close if not, and makes later dials
// (pgconn's cancel requests) plain.
func dialLingering(dial func(ctx context.Context, network, addr string) (net.Conn, error)) (_ func(ctx context.Context, network, addr string) (net.Conn, error), connected func() net.Conn) {
	if dial == nil {
		d := &net.Dialer{KeepAlive: 5 * time.Minute} // pgconn's default dialer
		dial = d.DialContext
	}
	var (
		mu   sync.Mutex
		done bool     // connected has been called
		last net.Conn // the descriptor kept of the last socket dialled
	)
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil || c == nil {
				return c, err
			}
			mu.Lock()
			defer mu.Unlock()
			if !done {
				// An earlier socket of this connect (a fallback, or TLS
				// refused) never reached a backend that holds a slot.
				if last != nil {
					_ = last.Close()
				}
				last = dupSocket(c)
			}
			return c, nil
		}, func() net.Conn {
			mu.Lock()
			defer mu.Unlock()
			done = true
			l := last
			last = nil
			return l
		}
}

// closeLingering closes nc by close (which closes the descriptor nc's
// owner reads and writes) and then waits, until deadline, for the server
// to let go of it, on a descriptor taken before close. It reports whether
// the server let go in time.
func closeLingering(nc net.Conn, deadline time.Time, close func()) (letGo bool) {
	dup := dupSocket(nc)
	close()
	return linger(dup, deadline)
}
