package pgclient

import (
	"context"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
)

// A read parked on the socket (as pgconn's background reader leaves one on
// an idle connection) holds its read lock; peek must not wait for it for
// ever: its deadline wakes the parked read, and the second try peeks.
func TestPeekDoesNotWaitForAParkedRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	srv := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		srv <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	s := <-srv
	require.NotNil(t, s)
	defer s.Close()

	parked := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1)) // nothing comes: parked until a deadline
		parked <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it park (the test passes either way)

	done := make(chan error, 1)
	go func() { done <- peek(context.Background(), c, manager.Metrics{}) }()
	select {
	case err := <-done:
		require.NoError(t, err, "a healthy connection")
	case <-time.After(5 * time.Second):
		t.Fatal("peek waited for the parked read")
	}
	select {
	case err := <-parked:
		require.True(t, errors.Is(err, os.ErrDeadlineExceeded), "the parked read ends with the deadline: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the parked read was not woken")
	}
	// peek cleared its deadline: a read now waits for data.
	time.Sleep(2 * peekWait)
	_, err = s.Write([]byte{1})
	require.NoError(t, err)
	n, err := c.Read(make([]byte, 1))
	require.NoError(t, err)
	require.Equal(t, 1, n)
}
