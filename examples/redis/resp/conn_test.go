package resp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/examples/redis/resp"
	"github.com/poolkit/poolkit/manager"
)

func connect(t *testing.T, m resp.Manager) *resp.Conn {
	t.Helper()
	c, err := m.Connect(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestConnParsesEveryReplyType(t *testing.T) {
	s := startFake(t)
	c := connect(t, resp.Manager{Addr: s.addr()})
	ctx := context.Background()
	for _, tc := range []struct {
		name, raw string
		want      resp.Reply
	}{
		{"Status", "+OK\r\n", resp.Reply{Kind: '+', Str: "OK"}},
		{"Integer", ":-42\r\n", resp.Reply{Kind: ':', Int: -42}},
		{"Bulk", "$5\r\nhe\r\no\r\n", resp.Reply{Kind: '$', Str: "he\r\no"}},
		{"EmptyBulk", "$0\r\n\r\n", resp.Reply{Kind: '$', Str: ""}},
		{"NilBulk", "$-1\r\n", resp.Reply{Kind: '$', Nil: true}},
		{"NilArray", "*-1\r\n", resp.Reply{Kind: '*', Nil: true}},
		{"Array", "*2\r\n:1\r\n$1\r\nx\r\n", resp.Reply{Kind: '*', Array: []resp.Reply{{Kind: ':', Int: 1}, {Kind: '$', Str: "x"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Do(ctx, "RAW", tc.raw)
			require.NoError(t, err)
			require.Equal(t, tc.want, r)
		})
	}
}

func TestConnErrorReplyLeavesTheConnUsable(t *testing.T) {
	s := startFake(t)
	c := connect(t, resp.Manager{Addr: s.addr()})
	_, err := c.Do(context.Background(), "NOPE")
	var se resp.Error
	require.ErrorAs(t, err, &se)
	require.Contains(t, string(se), "unknown command")
	require.NotErrorIs(t, err, resp.ErrBroken)
	require.False(t, c.Broken())
	r, err := c.Do(context.Background(), "PING")
	require.NoError(t, err)
	require.Equal(t, "PONG", r.Str)
}

func TestConnProtocolErrorBreaksTheConn(t *testing.T) {
	s := startFake(t)
	c := connect(t, resp.Manager{Addr: s.addr()})
	_, err := c.Do(context.Background(), "RAW", "?what\r\n")
	require.ErrorIs(t, err, resp.ErrBroken)
	require.True(t, c.Broken())
	_, err = c.Do(context.Background(), "PING")
	require.ErrorIs(t, err, resp.ErrBroken, "a broken conn stays broken")
}

func TestConnDoHonoursCancellation(t *testing.T) {
	// A listener that accepts (the backlog does) but never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	c := resp.NewConn(nc)
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	timer := time.AfterFunc(20*time.Millisecond, cancel)
	defer timer.Stop()
	_, err = c.Do(ctx, "PING")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, resp.ErrBroken)
}

func TestManagerRecyclePingsOnlyAfterIdleTime(t *testing.T) {
	s := startFake(t)
	ctx := context.Background()

	m := resp.Manager{Addr: s.addr(), PingAfter: time.Hour}
	c := connect(t, m)
	require.NoError(t, m.Recycle(ctx, c, manager.Metrics{LastUsed: time.Now(), Uses: 1}))
	require.Zero(t, s.pings.Load(), "a recently used connection is not pinged")

	m.PingAfter = 10 * time.Millisecond
	require.NoError(t, m.Recycle(ctx, c, manager.Metrics{LastUsed: time.Now().Add(-time.Second), Uses: 1}))
	require.EqualValues(t, 1, s.pings.Load(), "an idle connection is pinged")

	m.PingAfter = -1
	require.NoError(t, m.Recycle(ctx, c, manager.Metrics{LastUsed: time.Now().Add(-time.Hour), Uses: 1}))
	require.EqualValues(t, 1, s.pings.Load(), "negative PingAfter never pings")
}

func TestManagerRecycleRejectsAConnTheServerClosed(t *testing.T) {
	s := startFake(t)
	m := resp.Manager{Addr: s.addr(), PingAfter: time.Hour}
	c := connect(t, m)
	// Connect may return before the server has accepted: kill only once it has.
	require.Eventually(t, func() bool { return s.open() == 1 }, 5*time.Second, time.Millisecond)
	s.killAll()
	// The FIN arrives asynchronously: poll.
	deadline := time.Now().Add(5 * time.Second)
	var err error
	for err == nil && time.Now().Before(deadline) {
		err = m.Recycle(context.Background(), c, manager.Metrics{LastUsed: time.Now(), Uses: 1})
		if err == nil {
			time.Sleep(time.Millisecond)
		}
	}
	require.ErrorIs(t, err, manager.ErrBroken)
	require.ErrorIs(t, err, io.EOF)
	require.Zero(t, s.pings.Load(), "the peek found it without a round trip")
}

func TestManagerConnectNamesTheConnAndReportsDialErrors(t *testing.T) {
	s := startFake(t)
	_ = connect(t, resp.Manager{Addr: s.addr(), Name: "x"})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = resp.Manager{Addr: addr}.Connect(context.Background())
	var op *net.OpError
	require.True(t, errors.As(err, &op), "want a *net.OpError, got %v", err)

	_, err = resp.Manager{}.Connect(context.Background())
	require.ErrorContains(t, err, "Manager.Addr is empty")
}

func TestConnDoWithAnEndedContextSendsNothing(t *testing.T) {
	s := startFake(t)
	c := connect(t, resp.Manager{Addr: s.addr()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Do(ctx, "PING")
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, resp.ErrBroken)
	require.False(t, c.Broken())
	require.Zero(t, s.pings.Load())
	_, err = c.Do(context.Background(), "PING")
	require.NoError(t, err)
}
