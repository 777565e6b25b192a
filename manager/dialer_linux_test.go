//go:build linux

package manager_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
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

func TestDialerConnectHonoursContextDeadline(t *testing.T) {
	d := manager.Dialer{Network: "tcp", Address: unresponsiveAddr(t)}
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

// KeepAliveConfig and UserTimeout reach the socket.
func TestDialerSetsKeepAliveConfigAndUserTimeout(t *testing.T) {
	s := startServer(t, "tcp", "127.0.0.1:0")
	d := s.dialer()
	d.KeepAliveConfig = net.KeepAliveConfig{Enable: true, Idle: 7 * time.Second, Interval: 3 * time.Second, Count: 4}
	d.UserTimeout = 1500 * time.Millisecond
	client, _ := connect(t, s, d)
	rc, err := client.(syscall.Conn).SyscallConn()
	require.NoError(t, err)
	got := map[string]int{}
	var serr error
	require.NoError(t, rc.Control(func(fd uintptr) {
		for name, opt := range map[string][2]int{
			"SO_KEEPALIVE":     {syscall.SOL_SOCKET, syscall.SO_KEEPALIVE},
			"TCP_KEEPIDLE":     {syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE},
			"TCP_KEEPINTVL":    {syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL},
			"TCP_KEEPCNT":      {syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT},
			"TCP_USER_TIMEOUT": {syscall.IPPROTO_TCP, 0x12},
		} {
			v, err := syscall.GetsockoptInt(int(fd), opt[0], opt[1])
			if err != nil {
				serr = err
			}
			got[name] = v
		}
	}))
	require.NoError(t, serr)
	require.Equal(t, map[string]int{"SO_KEEPALIVE": 1, "TCP_KEEPIDLE": 7, "TCP_KEEPINTVL": 3, "TCP_KEEPCNT": 4, "TCP_USER_TIMEOUT": 1500}, got)
}

// envInNetns marks the child that runs a partition test in a network
// namespace of its own (see inOwnNetns).
const envInNetns = "POOLKIT_TEST_IN_NETNS"

// inOwnNetns runs the calling test again, alone, in a network namespace of
// its own (unshare -n), where it may take the loopback interface down to cut
// the network between a client and its server without touching the
// machine's; it returns true in that child. It skips the test where that is
// not possible (not root, no unshare or ip).
func inOwnNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(envInNetns) == "1" {
		out, err := exec.Command("ip", "link", "set", "lo", "up").CombinedOutput()
		require.NoError(t, err, "%s", out)
		return true
	}
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("a partition test needs %s (util-linux, iproute2)", tool)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("a partition test needs root, for a network namespace of its own")
	}
	cmd := exec.Command("unshare", "-n", os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), envInNetns+"=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the test in its own network namespace:\n%s", out)
	require.Contains(t, string(out), "--- PASS: "+t.Name(), "%s", out)
	return false
}

// partition takes the namespace's loopback down: nothing sent arrives any
// more, nothing is acknowledged.
func partition(t *testing.T) {
	out, err := exec.Command("ip", "link", "set", "lo", "down").CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// A connection to a peer cut off by a partition fails by itself, with
// UserTimeout set, once data sent stays unacknowledged that long: the
// client's read, which has no deadline of its own but a long safety net,
// ends with ETIMEDOUT instead of waiting on.
func TestDialerUserTimeoutEndsAConnectionToAPartitionedPeer(t *testing.T) {
	if !inOwnNetns(t) {
		return
	}
	s := startServer(t, "tcp", "127.0.0.1:0")
	d := s.dialer()
	d.UserTimeout = 500 * time.Millisecond
	client, _ := connect(t, s, d)
	partition(t)
	_, err := client.Write([]byte("request"))
	require.NoError(t, err, "the write is only queued")
	require.NoError(t, client.SetReadDeadline(time.Now().Add(time.Minute))) // the test's safety net
	_, err = client.Read(make([]byte, 1))
	require.ErrorIs(t, err, syscall.ETIMEDOUT, "the connection failed by itself")
}

// With KeepAliveConfig set, an idle connection to a partitioned peer fails
// by itself once its probes go unanswered.
func TestDialerKeepAliveEndsAnIdleConnectionToAPartitionedPeer(t *testing.T) {
	if !inOwnNetns(t) {
		return
	}
	s := startServer(t, "tcp", "127.0.0.1:0")
	d := s.dialer()
	d.KeepAliveConfig = net.KeepAliveConfig{Enable: true, Idle: time.Second, Interval: time.Second, Count: 2}
	client, _ := connect(t, s, d)
	partition(t)
	require.NoError(t, client.SetReadDeadline(time.Now().Add(time.Minute))) // the test's safety net
	_, err := client.Read(make([]byte, 1))
	require.ErrorIs(t, err, syscall.ETIMEDOUT, "the connection failed by itself")
}
