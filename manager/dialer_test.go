package manager_test

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
)

func TestDialerConnectValidatesFieldsNamingTheBadOne(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    manager.Dialer
		want string
	}{
		{"NoNetwork", manager.Dialer{Address: "127.0.0.1:1"}, "Dialer.Network is empty"},
		{"Datagram", manager.Dialer{Network: "udp", Address: "127.0.0.1:1"}, `Dialer.Network "udp"`},
		{"NoAddress", manager.Dialer{Network: "tcp"}, "Dialer.Address is empty"},
		{"NegativeUserTimeout", manager.Dialer{Network: "tcp", Address: "127.0.0.1:1", UserTimeout: -time.Second}, "Dialer.UserTimeout -1s is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := tc.d.Connect(context.Background())
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, conn)
		})
	}
}

func TestDialerConnectsOverTCP(t *testing.T) {
	s := startServer(t, "tcp", "127.0.0.1:0")
	client, server := connect(t, s, s.dialer())
	_, err := client.Write([]byte("hi"))
	require.NoError(t, err)
	buf := make([]byte, 2)
	_, err = io.ReadFull(server, buf)
	require.NoError(t, err)
	require.Equal(t, "hi", string(buf))
}

func TestDialerConnectWithCancelledContextFailsAtOnce(t *testing.T) {
	s := startServer(t, "tcp", "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	conn, err := s.dialer().Connect(ctx)
	require.Nil(t, conn)
	require.ErrorIs(t, err, context.Canceled)
}

func TestDialerCloseClosesTheConn(t *testing.T) {
	s := startServer(t, "tcp", "127.0.0.1:0")
	d := s.dialer()
	client, server := connect(t, s, d)
	require.NoError(t, d.Close(client))

	require.NoError(t, server.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err := server.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF)
	_, err = client.Write([]byte("x"))
	require.ErrorIs(t, err, net.ErrClosed)
}

func TestDialerCloseOfNilIsANoOp(t *testing.T) {
	require.NoError(t, manager.Dialer{}.Close(nil))
}

func TestDialerRecycleOfNilFails(t *testing.T) {
	err := manager.Dialer{}.Recycle(context.Background(), nil, manager.Metrics{})
	require.ErrorIs(t, err, manager.ErrBroken)
}

// A conn that is not a syscall.Conn (net.Pipe here; a *tls.Conn in
// practice) cannot be peeked at and passes, even with unread data.
func TestDialerRecyclePassesConnsThatAreNotSyscallConns(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	_, ok := client.(syscall.Conn)
	require.False(t, ok)
	require.NoError(t, manager.Dialer{}.Recycle(context.Background(), client, manager.Metrics{}))

	done := make(chan error, 1)
	go func() { _, err := server.Write([]byte("x")); done <- err }()
	require.NoError(t, manager.Dialer{}.Recycle(context.Background(), client, manager.Metrics{}))
	_, err := io.ReadFull(client, make([]byte, 1))
	require.NoError(t, err)
	require.NoError(t, <-done)
}

// Dialer.Recycle's errors say the connection itself is gone, so they match
// ErrBroken: the pool closes such a connection even when the acquirer's
// context ended during the check.
func TestDialerRecycleErrorsMatchErrBroken(t *testing.T) {
	err := manager.Dialer{}.Recycle(context.Background(), nil, manager.Metrics{})
	require.ErrorIs(t, err, manager.ErrBroken)
	require.Equal(t, "manager: connection not reusable: nil connection", err.Error())
	require.False(t, errors.Is(err, io.EOF))
}
