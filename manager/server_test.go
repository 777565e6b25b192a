package manager_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
)

// testServer is a listener whose accept loop hands connections to the test.
// Its cleanup closes the listener, waits for the loop and closes every
// connection it accepted.
type testServer struct {
	ln    net.Listener
	conns chan net.Conn // accepted, not yet taken by the test
}

func startServer(t *testing.T, network, address string) *testServer {
	t.Helper()
	ln, err := net.Listen(network, address)
	require.NoError(t, err)
	s := &testServer{ln: ln, conns: make(chan net.Conn, 16)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		close(s.conns)
		for c := range s.conns {
			c.Close()
		}
	})
	return s
}

// dialer returns a Dialer for s.
func (s *testServer) dialer() manager.Dialer {
	return manager.Dialer{Network: s.ln.Addr().Network(), Address: s.ln.Addr().String()}
}

// accept returns the server side of the next connection; the test's cleanup
// closes it.
func (s *testServer) accept(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-s.conns:
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("server accepted no connection")
		return nil
	}
}

// connect dials s with d and returns both ends; the test's cleanup closes
// them.
func connect(t *testing.T, s *testServer, d manager.Dialer) (client, server net.Conn) {
	t.Helper()
	client, err := d.Connect(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	return client, s.accept(t)
}
