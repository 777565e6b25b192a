package main

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/examples/echo"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// A pool keeps a closing object's slot until Manager.Close has returned, so a
// waiter does not dial a replacement while the old connection is still open:
// a server with a hard connection limit (PostgreSQL's max_connections) never
// sees more than MaxSize of the pool's connections. Here Close takes 300 ms
// (a polite protocol goodbye on a slow link).
func TestServerNeverSeesMoreThanMaxSizeConnections(t *testing.T) {
	srv, err := echo.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()
	d := manager.Dialer{Network: "tcp", Address: srv.Addr(), Timeout: 5 * time.Second}
	m := manager.Funcs[net.Conn]{
		ConnectFunc: d.Connect,
		RecycleFunc: d.Recycle,
		CloseFunc: func(c net.Conn) error {
			time.Sleep(300 * time.Millisecond)
			return c.Close()
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
	for srv.Accepted() < 2 && ctx.Err() == nil { // the server registers it asynchronously
		time.Sleep(time.Millisecond)
	}
	require.LessOrEqual(t, srv.Open(), 1, "the server holds %d of a MaxSize=1 pool's connections", srv.Open())
}
