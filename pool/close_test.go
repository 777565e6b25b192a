package pool_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// No object is closed for idleness before it has been idle MaxIdleTime: a
// maintainer pass a minute short of it closes nothing, one past it closes
// every idle object.
func TestNoIdleCloseBeforeMaxIdleTime(t *testing.T) { run(t, testNoIdleCloseBeforeMaxIdleTime) }

func testNoIdleCloseBeforeMaxIdleTime(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 8, MaxIdleTime: time.Hour})
	fill(t, p, 4)
	time.Sleep(59 * time.Minute) // the maintainer's passes, every fourth tick
	st := settle(t, p)
	require.Zero(t, st.ClosedBy[pool.CloseIdle], "idle 59 minutes of 60: %+v", st)
	require.Equal(t, 4, st.Idle)
	time.Sleep(2 * time.Minute)
	require.Equal(t, uint64(4), settle(t, p).ClosedBy[pool.CloseIdle])
}

// A shrink that leaves room for every live object (8 -> 7 with 4
// live) closes nothing at the maintainer's pass it triggers.
func TestSetMaxSizeShrinkKeepsObjectsThatFit(t *testing.T) {
	run(t, testSetMaxSizeShrinkKeepsObjectsThatFit)
}

func testSetMaxSizeShrinkKeepsObjectsThatFit(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 8, MaxIdleTime: time.Hour})
	fill(t, p, 4)
	p.SetMaxSize(7)
	p.Reap() // the pass SetMaxSize pokes the maintainer into, run here
	st := settle(t, p)
	require.Equal(t, 4, st.Live, "4 live objects fit under MaxSize 7 and were used just now: %+v", st)
	require.Zero(t, st.ClosedBy[pool.CloseIdle]+st.ClosedBy[pool.CloseShrink], "%+v", st)
}

// An Acquire cut short by Close while its connect is in flight
// reports ErrClosed (not the pool's internal context.Canceled, which callers
// would read as "my context was cancelled").
func TestAcquireCutByCloseMatchesErrClosed(t *testing.T) {
	run(t, testAcquireCutByCloseMatchesErrClosed)
}

func testAcquireCutByCloseMatchesErrClosed(t *testing.T, mode testMode) {
	inConnect := make(chan struct{})
	f := &fakeMgr{connect: func(ctx context.Context) error { close(inConnect); <-ctx.Done(); return ctx.Err() }}
	p, err := pool.New[*obj](f, mode.config(pool.Config{MaxSize: 1}))
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := p.Acquire(context.Background())
		errc <- err
	}()
	<-inConnect // Manager.Connect is in flight
	require.NoError(t, p.Close(context.Background()))
	err = <-errc
	require.ErrorIs(t, err, pool.ErrClosed, "got %q", err)
}

// An Acquire that began before Close (here: stalled in Recycle of an
// idle object while Close runs) does not go on, after Close, to reserve a slot
// and dial: no Manager.Connect runs after Close began and no fresh object comes
// out of a closed pool (reserve refuses once the pool is closed).
func TestAcquireInFlightDoesNotConnectAfterClose(t *testing.T) {
	run(t, testAcquireInFlightDoesNotConnectAfterClose)
}

func testAcquireInFlightDoesNotConnectAfterClose(t *testing.T, mode testMode) {
	var leases, connects int
	for range 20 {
		var closing atomic.Bool
		var connectsAfterClose, recycles atomic.Int32
		inRecycle := make(chan struct{})
		unblock := make(chan struct{})
		f := &fakeMgr{
			connect: func(ctx context.Context) error {
				if closing.Load() {
					connectsAfterClose.Add(1)
				}
				return nil // a manager that does not look at ctx
			},
			recycle: func(ctx context.Context, o *obj, m manager.Metrics) error {
				if recycles.Add(1) == 2 { // the second idle object: inside acquireSlow
					close(inRecycle)
					<-unblock
				}
				return errFake
			},
		}
		p, err := pool.New[*obj](f, mode.config(pool.Config{MaxSize: 2}))
		require.NoError(t, err)
		a, b := acquire(t, p), acquire(t, p)
		a.Release()
		b.Release() // two idle, used objects: each taker recycles them

		type res struct {
			l   pool.Lease[*obj]
			err error
		}
		resc := make(chan res, 1)
		go func() {
			l, err := p.Acquire(context.Background())
			resc <- res{l, err}
		}()
		<-inRecycle
		closing.Store(true)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		require.ErrorIs(t, p.Close(ctx), context.DeadlineExceeded) // the object in Recycle is live
		cancel()
		close(unblock) // Recycle fails: the acquire goes on, after Close
		r := <-resc
		if r.err == nil {
			leases++
			r.l.Release()
		}
		require.NoError(t, p.Close(context.Background()))
		connects += int(connectsAfterClose.Load())
	}
	if leases > 0 || connects > 0 {
		t.Fatalf("in 20 runs: Manager.Connect ran %d times after Close began, and an Acquire that was in flight at Close returned a fresh lease %d times", connects, leases)
	}
}
