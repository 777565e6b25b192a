//go:build linux

package manager_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
)

// unresponsiveAddr returns the address of a listener on 127.0.0.1 whose
// accept queue is full, so that Linux drops the SYN of a new connection and
// a dial to it hangs until its timeout. It listens with a backlog of 0 and
// dials until a dial times out; those connections stay open until cleanup.
func unresponsiveAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))

	for range 16 {
		c, err := net.DialTimeout("tcp", addr, 250*time.Millisecond)
		if err != nil {
			var netErr net.Error
			require.True(t, errors.As(err, &netErr) && netErr.Timeout(), "filling the accept queue: %v", err)
			return addr
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Skip("could not fill the accept queue of a listener with backlog 0")
	return ""
}

// requireDialTimedOut checks that a Connect that started at start failed with
// a deadline's timeout, and not before want had passed: a deadline never
// fires early, so that bound holds however loaded the machine. (No upper
// bound: a dial that ignored its deadline would end, much later, with the
// kernel's ETIMEDOUT, which is not context.DeadlineExceeded.)
func requireDialTimedOut(t *testing.T, conn net.Conn, err error, start time.Time, want time.Duration) {
	t.Helper()
	returned := time.Now()
	require.Nil(t, conn)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var netErr net.Error
	require.True(t, errors.As(err, &netErr) && netErr.Timeout(), "want a timeout, got %v", err)
	require.False(t, returned.Before(start.Add(want)), "the dial ended before its deadline")
}

func TestDialerConnectHonoursTimeout(t *testing.T) {
	d := manager.Dialer{Network: "tcp", Address: unresponsiveAddr(t), Timeout: 100 * time.Millisecond}
	start := time.Now()
	conn, err := d.Connect(context.Background())
	requireDialTimedOut(t, conn, err, start, d.Timeout)
}

func TestDialerConnectHonoursContextDeadline(t *testing.T) {
	d := manager.Dialer{Network: "tcp", Address: unresponsiveAddr(t), Timeout: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	conn, err := d.Connect(ctx)
	requireDialTimedOut(t, conn, err, start, 100*time.Millisecond)
}

func TestDialerConnectHonoursContextCancellationMidDial(t *testing.T) {
	d := manager.Dialer{Network: "tcp", Address: unresponsiveAddr(t)}
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(50*time.Millisecond, cancel)
	defer timer.Stop()
	conn, err := d.Connect(ctx)
	require.Nil(t, conn)
	require.ErrorIs(t, err, context.Canceled)
}

func TestDialerSetsKeepAlive(t *testing.T) {
	s := startServer(t, "tcp", "127.0.0.1:0")
	for _, tc := range []struct {
		name      string
		keepAlive time.Duration
		wantOn    bool
		wantIdle  int // seconds; 0: not checked
	}{
		{"KeepAlive=0", 0, true, 0},
		{"KeepAlive=42s", 42 * time.Second, true, 42},
		{"KeepAlive=-1", -1, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := s.dialer()
			d.KeepAlive = tc.keepAlive
			client, _ := connect(t, s, d)
			rc, err := client.(syscall.Conn).SyscallConn()
			require.NoError(t, err)
			var on, idle int
			var serr error
			require.NoError(t, rc.Control(func(fd uintptr) {
				on, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
				if serr == nil {
					idle, serr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
				}
			}))
			require.NoError(t, serr)
			require.Equal(t, tc.wantOn, on != 0)
			if tc.wantIdle != 0 {
				require.Equal(t, tc.wantIdle, idle)
			}
		})
	}
}
