package main

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/examples/tcp/echo"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// A pool keeps a closing object's slot until Manager.Close has returned, so a
// waiter does not dial a replacement while the old connection is still open:
// a server with a hard connection limit (PostgreSQL's max_connections) never
// sees more than MaxSize of the pool's connections. Here Close takes 300 ms
// (a polite protocol goodbye on a slow link). The manager counts the
// connections open on the client side, from dial to close: at most MaxSize
// at any instant. The server, which learns of a close only when it reads the
// end of the stream, drops to MaxSize once it has.
func TestServerNeverSeesMoreThanMaxSizeConnections(t *testing.T) {
	srv, err := echo.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()
	d := manager.Dialer{Network: "tcp", Address: srv.Addr()}
	var open, maxOpen atomic.Int64
	m := manager.Funcs[net.Conn]{
		ConnectFunc: func(ctx context.Context) (net.Conn, error) {
			c, err := d.Connect(ctx)
			if err == nil {
				n := open.Add(1)
				for m := maxOpen.Load(); n > m && !maxOpen.CompareAndSwap(m, n); m = maxOpen.Load() {
				}
			}
			return c, err
		},
		RecycleFunc: d.Recycle,
		CloseFunc: func(c net.Conn) error {
			time.Sleep(300 * time.Millisecond)
			err := c.Close()
			open.Add(-1)
			return err
		},
	}
	p, err := pool.New[net.Conn](m, pool.Config{MaxSize: 1})
	require.NoError(t, err)
	defer p.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	l, err := p.Acquire(ctx)
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		l2, err := p.Acquire(ctx) // waits: MaxSize is 1
		if err == nil {
			l2.Release()
		}
		got <- err
	}()
	for p.Stats().Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	l.Destroy()
	require.NoError(t, <-got)
	require.Equal(t, int64(1), maxOpen.Load(), "the pool had more than MaxSize=1 connections open at once")
	for srv.Accepted() < 2 && ctx.Err() == nil { // the server registers it asynchronously
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, srv.WaitOpen(ctx, 1), "the server ends with the one connection the pool keeps")
}
