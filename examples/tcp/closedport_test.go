package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// closedPort returns 127.0.0.1:port where nothing listens: a port the
// kernel just handed out and that was closed again.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// countingDialer is manager.Dialer with its connect attempts counted.
func countingDialer(addr string, dials *atomic.Int64) manager.Funcs[net.Conn] {
	d := manager.Dialer{Network: "tcp", Address: addr}
	return manager.Funcs[net.Conn]{
		ConnectFunc: func(ctx context.Context) (net.Conn, error) {
			dials.Add(1)
			return d.Connect(ctx)
		},
		RecycleFunc: d.Recycle,
		CloseFunc:   d.Close,
	}
}

// requireRefused checks that err is the dial error of a refused connection,
// not a timeout.
func requireRefused(t *testing.T, err error) {
	t.Helper()
	var op *net.OpError
	require.ErrorAs(t, err, &op, "want the dial error")
	require.Equal(t, "dial", op.Op)
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	require.NotErrorIs(t, err, pool.ErrTimeout)
	require.NotErrorIs(t, err, context.DeadlineExceeded)
}

func TestAcquireFromAClosedPortReturnsTheDialError(t *testing.T) {
	var dials atomic.Int64
	p, err := pool.New[net.Conn](countingDialer(closedPort(t), &dials), pool.Config{MaxSize: 4})
	require.NoError(t, err)
	defer p.Close(context.Background())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = p.Acquire(ctx) // a dial that hung instead would end with ctx's deadline: not refused
	requireRefused(t, err)
	require.EqualValues(t, 1, dials.Load())
	require.Zero(t, p.Stats().Live, "a failed connect frees its slot")
}

// Under a second of load from more goroutines than MaxSize, each looping on
// Acquire against a closed port, the pool dials at most once per Acquire
// (plus the maintainer's backed-off attempts to keep MinIdle warm): it
// neither retries a dial in a loop on its own (a spin) nor dials more than it
// is asked to (a storm). With AcquireTimeout set an Acquire retries its
// connect within its deadline, but with pauses (10 ms doubling to 200 ms):
// at most 9 dials in the second each Acquire lasts. Once the load stops,
// dialling stops but for the maintainer's backed-off attempts.
func TestPoolNeitherSpinsNorStormsWhenNothingListens(t *testing.T) {
	for _, tc := range []struct {
		acquireTimeout  time.Duration
		dialsPerAcquire int64
	}{{0, 1}, {time.Second, 9}} {
		t.Run(fmt.Sprintf("AcquireTimeout=%v", tc.acquireTimeout), func(t *testing.T) {
			neitherSpinsNorStorms(t, tc.acquireTimeout, tc.dialsPerAcquire)
		})
	}
}

func neitherSpinsNorStorms(t *testing.T, acquireTimeout time.Duration, dialsPerAcquire int64) {
	const (
		maxSize = 4
		minIdle = 2
		workers = 8
		// The maintainer's background connects back off exponentially from
		// 10 ms after each failure; over a second they are a handful.
		maintainerSlack = 16
	)
	var dials atomic.Int64
	p, err := pool.New[net.Conn](countingDialer(closedPort(t), &dials),
		pool.Config{MaxSize: maxSize, MinIdle: minIdle, AcquireTimeout: acquireTimeout})
	require.NoError(t, err)
	defer p.Close(context.Background())

	load := time.Second
	ctx, cancel := context.WithTimeout(context.Background(), load)
	defer cancel()
	var acquires, others atomic.Int64
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var firstOther error
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				acquires.Add(1)
				l, err := p.Acquire(context.Background())
				if err == nil {
					l.Release()
					err = errors.New("acquired a connection from a closed port")
				}
				var op *net.OpError
				if !errors.As(err, &op) || !errors.Is(err, syscall.ECONNREFUSED) {
					others.Add(1)
					errMu.Lock()
					firstOther = cmp.Or(firstOther, err)
					errMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	d, a := dials.Load(), acquires.Load()
	s := p.Stats()
	t.Logf("%v of load: acquires=%d dials=%d connects=%d connectErrors=%d waits=%d",
		load, a, d, s.Connects, s.ConnectErrors, s.Waits)
	require.Zero(t, others.Load(), "every Acquire returns the dial error; first other: %v", firstOther)
	require.Positive(t, a)
	require.LessOrEqual(t, d, a*dialsPerAcquire+maintainerSlack, "more dials than the acquires asked for: the pool storms")
	// A refused dial holds no connection: Live falls to zero once the
	// maintainer's MinIdle dial, which may be in flight now, fails.
	for deadline := time.Now().Add(5 * time.Second); p.Stats().Live != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	require.Zero(t, p.Stats().Live, "a refused dial left a live connection")

	// Idle: only the maintainer dials, backing off.
	before := dials.Load()
	quiet := 300 * time.Millisecond
	time.Sleep(quiet) // the test measures what happens during this time
	require.LessOrEqual(t, dials.Load()-before, int64(3), "the pool keeps dialling with nobody asking: it spins")
	require.NoError(t, p.Close(context.Background()))
}
