// Package pooltest drives a pool (and a byte pool) to a state known in
// advance, for the tests of the packages that export pool.Stats and
// bytepool.Stats (contrib/poolprom, contrib/poolotel): each checks its own names
// and values against the same state. NewKeyed and Hold give them keyed
// pools whose keys hold known numbers of objects. Its Events observer lets a test against
// a real server wait for what the pool did, rather than poll it.
package pooltest

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// TimedOutWait is how long the one Acquire of DrivePool that times out
// waits, on the bubble's clock: the only blocked Acquire that takes any
// time.
const TimedOutWait = 5 * time.Millisecond

// DrivePool brings a pool of MaxSize 2 to a known state: one connection
// used, one idle; three created and one destroyed; four acquires; three
// waits in line (one timed out, one cancelled, and the Acquire that made the
// third connection, which waits in line for its connect); and, while wait
// runs, one Acquire waiting in line. It returns once that waiter has given
// up (cancelled), with the pool quiescent.
//
// It must run in a synctest bubble (synctest.Test), which it settles with
// synctest.Wait rather than by polling. The waits are timed on the bubble's
// clock, so the wait histogram is known exactly: five blocked Acquires (two
// connects, the timed-out and the cancelled waits, and the third
// connection's), of which only the timed-out one lasted any time,
// TimedOutWait.
func DrivePool(t *testing.T, wait func(*pool.Pool[int])) *pool.Pool[int] {
	t.Helper()
	requireBubble(t)
	var n atomic.Int64
	// a's Manager.Close waits until the third connection's Acquire is in
	// line: that Acquire then waits for a's slot, whatever the scheduling.
	closeGate := make(chan struct{})
	p, err := pool.New[int](manager.Funcs[int]{
		ConnectFunc: func(context.Context) (int, error) { return int(n.Add(1)), nil },
		CloseFunc:   func(int) error { <-closeGate; return nil },
	}, pool.Config{MaxSize: 2})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })
	ctx := t.Context()

	a, err := p.Acquire(ctx)
	require.NoError(t, err)
	b, err := p.Acquire(ctx)
	require.NoError(t, err)

	tctx, cancel := context.WithTimeout(ctx, TimedOutWait)
	_, err = p.Acquire(tctx) // full: waits, times out
	cancel()
	require.ErrorIs(t, err, pool.ErrTimeout)

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := p.Acquire(cctx) // full: waits until cancelled
		done <- err
	}()
	synctest.Wait()
	require.Equal(t, 1, p.Stats().Waiting)
	wait(p)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	b.Release()
	a.Destroy()
	c, err := p.Acquire(ctx) // b's connection, idle
	require.NoError(t, err)
	got := make(chan pool.Lease[int], 1)
	go func() {
		d, err := p.Acquire(ctx) // a third connection, once a's slot is free
		assert.NoError(t, err)
		got <- d
	}()
	synctest.Wait()
	require.Equal(t, 1, p.Stats().Waiting)
	close(closeGate)
	d := <-got
	d.Release()
	t.Cleanup(c.Release) // c stays leased until the test ends (before Close: cleanups run last first)
	synctest.Wait()
	s := p.Stats()
	require.Zero(t, s.Closing)
	require.Equal(t, 1, s.Idle)
	return p
}

// DriveBytes returns a byte pool of classes 64 to 128 bytes, with nothing
// trimmed while the test runs, after two Gets of 120 bytes (the first
// allocates a 128-byte buffer, the second is served by the P's stack, each
// Put back), a Get above MaxSize (a plain allocation) and a Put below
// MinSize (dropped). The caller runs it with GOMAXPROCS 1, so that every
// Get and Put runs on the one P and the sources of the Gets are known.
func DriveBytes(t *testing.T) *bytepool.Pool {
	t.Helper()
	bp, err := bytepool.New(bytepool.Config{MinSize: 64, MaxSize: 128, IdleTimeout: -1, IdleCycles: -1})
	require.NoError(t, err)
	b := bp.Get(120)
	bp.Put(b)
	b = bp.Get(120)
	bp.Put(b)
	_ = bp.Get(4096)
	bp.Put(make([]byte, 0, 8))
	return bp
}

// Events is a pool.Observer that signals every close by a health check and
// every successful connect, so that a test against a real server, which
// cannot run on synctest's clock, waits for them instead of polling the
// pool's state.
type Events struct {
	pool.NopObserver
	healthCloses, connects chan struct{}
}

// NewEvents returns an Events; it holds up to 1024 unawaited signals of each
// kind and drops any beyond (it never blocks the pool).
func NewEvents() *Events {
	return &Events{healthCloses: make(chan struct{}, 1024), connects: make(chan struct{}, 1024)}
}

func (e *Events) Closed(_ context.Context, ev pool.CloseEvent) {
	if ev.Reason == pool.CloseHealthCheck {
		signal(e.healthCloses)
	}
}

func (e *Events) ConnectEnd(_ context.Context, ev pool.ConnectEvent) {
	if ev.Err == nil {
		signal(e.connects)
	}
}

func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// AwaitConnects waits for n successful connects not awaited before, failing
// the test if ctx ends first.
func (e *Events) AwaitConnects(ctx context.Context, t testing.TB, n int) {
	t.Helper()
	await(ctx, t, e.connects, n, "successful connects")
}

// AwaitHealthCloses waits for n closes by a health check not awaited before,
// failing the test if ctx ends first.
func (e *Events) AwaitHealthCloses(ctx context.Context, t testing.TB, n int) {
	t.Helper()
	await(ctx, t, e.healthCloses, n, "closes by a health check")
}

func await(ctx context.Context, t testing.TB, ch <-chan struct{}, n int, what string) {
	t.Helper()
	for i := range n {
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("pooltest: %d of %d %s before %v", i, n, what, ctx.Err())
		}
	}
}

// requireBubble fails t at once when it is not running in a synctest bubble
// (synctest.Wait panics there), rather than leaving the pool it would drive
// to hang its test's clean-up.
func requireBubble(t *testing.T) {
	t.Helper()
	defer func() {
		if recover() != nil {
			t.Fatal("pooltest: DrivePool must run inside synctest.Test")
		}
	}()
	synctest.Wait()
}
