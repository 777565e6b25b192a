//go:build unix && !aix

package manager_test

import (
	"context"
	"io"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
)

// The Recycle tests run over TCP and over a Unix socket in t.TempDir().
func forEachNetwork(t *testing.T, test func(t *testing.T, s *testServer)) {
	t.Run("Network=tcp", func(t *testing.T) {
		test(t, startServer(t, "tcp", "127.0.0.1:0"))
	})
	t.Run("Network=unix", func(t *testing.T) {
		test(t, startServer(t, "unix", filepath.Join(t.TempDir(), "s")))
	})
}

func TestDialerConnectToClosedPortReturnsTheDialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	d := manager.Dialer{Network: "tcp", Address: addr}
	conn, err := d.Connect(context.Background())
	require.Nil(t, conn)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	var opErr *net.OpError
	require.ErrorAs(t, err, &opErr)
	require.Equal(t, "dial", opErr.Op)
	require.False(t, opErr.Timeout(), "a refused dial is not a timeout: %v", err)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
}

func TestDialerRecyclePassesAHealthyConn(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, s *testServer) {
		d := s.dialer()
		client, server := connect(t, s, d)
		ctx := context.Background()
		require.NoError(t, d.Recycle(ctx, client, manager.Metrics{}))

		// A full request and reply leaves it reusable.
		_, err := client.Write([]byte("ping"))
		require.NoError(t, err)
		buf := make([]byte, 4)
		_, err = io.ReadFull(server, buf)
		require.NoError(t, err)
		_, err = server.Write([]byte("pong"))
		require.NoError(t, err)
		_, err = io.ReadFull(client, buf)
		require.NoError(t, err)
		require.Equal(t, "pong", string(buf))
		require.NoError(t, d.Recycle(ctx, client, manager.Metrics{Uses: 1}))
	})
}

func TestDialerRecycleDetectsAConnThePeerClosed(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, s *testServer) {
		d := s.dialer()
		client, server := connect(t, s, d)
		require.NoError(t, d.Recycle(context.Background(), client, manager.Metrics{}))
		require.NoError(t, server.Close())

		err := recycleUntilError(t, d, client)
		require.ErrorIs(t, err, manager.ErrBroken)
		require.ErrorIs(t, err, io.EOF)
	})
}

func TestDialerRecycleDetectsAConnThePeerReset(t *testing.T) {
	s := startServer(t, "tcp", "127.0.0.1:0")
	d := s.dialer()
	client, server := connect(t, s, d)
	require.NoError(t, server.(*net.TCPConn).SetLinger(0)) // close sends RST
	require.NoError(t, server.Close())

	err := recycleUntilError(t, d, client)
	require.ErrorIs(t, err, manager.ErrBroken)
	require.ErrorIs(t, err, syscall.ECONNRESET)
	require.NotErrorIs(t, err, io.EOF)
}

func TestDialerRecycleRejectsAConnWithUnreadData(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, s *testServer) {
		d := s.dialer()
		client, server := connect(t, s, d)
		_, err := server.Write([]byte("x"))
		require.NoError(t, err)

		err = recycleUntilError(t, d, client)
		require.ErrorIs(t, err, manager.ErrBroken)
		require.NotErrorIs(t, err, io.EOF)
		require.ErrorContains(t, err, "unread data")

		// The peek consumed nothing.
		buf := make([]byte, 1)
		_, err = io.ReadFull(client, buf)
		require.NoError(t, err)
		require.Equal(t, "x", string(buf))
		require.NoError(t, d.Recycle(context.Background(), client, manager.Metrics{}))
	})
}

// Data beats EOF: a reply left unread before the peer hung up is reported as
// unread data, and either way the conn is not reusable.
func TestDialerRecycleRejectsUnreadDataBeforeEOF(t *testing.T) {
	s := startServer(t, "tcp", "127.0.0.1:0")
	d := s.dialer()
	client, server := connect(t, s, d)
	_, err := server.Write([]byte("bye"))
	require.NoError(t, err)
	require.NoError(t, server.Close())

	err = recycleUntilError(t, d, client)
	require.ErrorIs(t, err, manager.ErrBroken)
	require.ErrorContains(t, err, "unread data")
}

func TestDialerRecycleRejectsAConnClosedLocally(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, s *testServer) {
		d := s.dialer()
		client, _ := connect(t, s, d)
		require.NoError(t, client.Close())

		err := d.Recycle(context.Background(), client, manager.Metrics{})
		require.ErrorIs(t, err, manager.ErrBroken)
		require.ErrorIs(t, err, net.ErrClosed)
	})
}

// wrappedConn is a syscall.Conn of a type Recycle does not special-case.
type wrappedConn struct {
	net.Conn
	sc syscall.Conn
}

func (w wrappedConn) SyscallConn() (syscall.RawConn, error) { return w.sc.SyscallConn() }

func TestDialerRecycleChecksOtherSyscallConns(t *testing.T) {
	s := startServer(t, "tcp", "127.0.0.1:0")
	d := s.dialer()
	client, server := connect(t, s, d)
	w := wrappedConn{Conn: client, sc: client.(syscall.Conn)}
	require.NoError(t, d.Recycle(context.Background(), w, manager.Metrics{}))
	require.NoError(t, server.Close())

	err := recycleUntilError(t, d, w)
	require.ErrorIs(t, err, manager.ErrBroken)
	require.ErrorIs(t, err, io.EOF)
}

func TestDialerRecycleDoesNotAllocate(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, s *testServer) {
		d := s.dialer()
		client, _ := connect(t, s, d)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var err error
		allocs := testing.AllocsPerRun(1000, func() {
			err = d.Recycle(ctx, client, manager.Metrics{})
		})
		require.NoError(t, err)
		require.Zero(t, allocs)
	})
}

// recycleUntilError calls d.Recycle on conn until it fails, and returns the
// error; it fails the test if Recycle still passes after a generous
// deadline. Whatever the peer did is in flight on the loopback interface, so
// the loop normally ends at once.
func recycleUntilError(t *testing.T, d manager.Dialer, conn net.Conn) error {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := d.Recycle(context.Background(), conn, manager.Metrics{}); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			t.Fatal("Recycle still passes 10s after the peer acted")
		}
		time.Sleep(time.Millisecond)
	}
}

// A healthy connection whose last user left a read or write deadline that
// has passed is reusable: Recycle clears the deadlines before it peeks, and
// the next user starts without one.
func TestDialerRecycleClearsADeadlineThatHasPassed(t *testing.T) {
	forEachNetwork(t, func(t *testing.T, s *testServer) {
		for _, set := range []func(net.Conn, time.Time) error{net.Conn.SetReadDeadline, net.Conn.SetWriteDeadline, net.Conn.SetDeadline} {
			d := s.dialer()
			client, server := connect(t, s, d)
			require.NoError(t, set(client, time.Now().Add(-time.Second)))
			require.NoError(t, d.Recycle(context.Background(), client, manager.Metrics{Uses: 1}), "a past deadline is not a dead connection")
			_, err := server.Write([]byte("x"))
			require.NoError(t, err)
			buf := make([]byte, 1)
			_, err = io.ReadFull(client, buf) // no deadline left
			require.NoError(t, err)
			_, err = client.Write([]byte("y"))
			require.NoError(t, err)
		}
	})
}
