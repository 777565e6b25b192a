package pool_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// outage is a fakeMgr whose connects fail while down is set.
func outage(down *atomic.Bool) *fakeMgr {
	return &fakeMgr{connect: func(context.Context) error {
		if down.Load() {
			return errFake
		}
		return nil
	}}
}

// While connects fail, the maintainer's own connects back off and probe one
// at a time; a caller that asks for a connect (Acquire, TryAcquire) gets one
// at once whatever that back-off says, so a burst of callers after the
// fault has healed is served without waiting for it (DESIGN.md, invariant 25).
func TestBackgroundConnectsBackOffButCallersDoNot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		down.Store(true)
		p := newPool(t, outage(&down), pool.Config{MaxSize: 8, MinIdle: 4})
		time.Sleep(10 * time.Second)
		synctest.Wait()
		st := p.Stats()
		// 10 s of back-off doubling from 10 ms: 4 at the start, then one
		// probe each time it runs out (10, 20, ... 5120 ms): at most 14.
		require.LessOrEqual(t, st.Connects, uint64(14), "the maintainer backs off")
		require.GreaterOrEqual(t, st.Connects, uint64(5), "and keeps probing")
		require.Equal(t, st.Connects, st.ConnectErrors)

		before := st.Connects
		for range 3 {
			_, err := p.TryAcquire(context.Background())
			require.ErrorIs(t, err, pool.ErrExhausted)
		}
		synctest.Wait()
		require.Equal(t, before+3, p.Stats().Connects, "each TryAcquire started its connect")

		down.Store(false) // healed, with the back-off at its longest
		start := time.Now()
		var ls []pool.Lease[*obj]
		for len(ls) < 4 {
			// A TryAcquire may find the object of an earlier one's connect,
			// if that connect has already run.
			l, err := p.TryAcquire(context.Background())
			if err != nil {
				require.ErrorIs(t, err, pool.ErrExhausted)
				synctest.Wait() // the connect it started
				l, err = p.TryAcquire(context.Background())
				require.NoError(t, err, "its connect made an object at once")
			}
			ls = append(ls, l)
		}
		for range 4 {
			ls = append(ls, acquire(t, p)) // Acquires connect at once too
		}
		require.Zero(t, time.Since(start), "nobody waited for the back-off")
		for _, l := range ls {
			l.Release()
		}
	})
}

// blockUntilDone is a Recycle that takes 10 s, or until its context ends.
func blockUntilDone(ctx context.Context, _ *obj, _ manager.Metrics) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return nil
	}
}

// AcquireTimeout bounds the whole Acquire from its start (DESIGN.md,
// invariant 6): the wait, and the check of the object handed to the waiter.
// The check it cuts is the caller's deadline, not the object's fault: the
// object stays.
func TestAcquireTimeoutBoundsTheCheckOfAHandedObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slow atomic.Bool
		f := &fakeMgr{recycle: func(ctx context.Context, o *obj, m manager.Metrics) error {
			if slow.Load() {
				return blockUntilDone(ctx, o, m)
			}
			return nil
		}}
		p := newPool(t, f, pool.Config{MaxSize: 1, AcquireTimeout: 300 * time.Millisecond})
		held := acquire(t, p)
		slow.Store(true)
		go func() {
			time.Sleep(200 * time.Millisecond)
			held.Release() // handed to the waiter, whose check is slow
		}()
		start := time.Now()
		_, err := p.Acquire(context.Background())
		require.ErrorIs(t, err, pool.ErrTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, 300*time.Millisecond, time.Since(start), "AcquireTimeout from the Acquire's start")
		synctest.Wait()
		st := p.Stats()
		require.Zero(t, st.Closed, "the object is not at fault")
		require.Equal(t, 1, st.Idle)
	})
}

// The time an Acquire's slow path spends checking idle objects that fail
// counts against its AcquireTimeout: the wait that follows ends at the
// start plus AcquireTimeout. (A check on the fast path, of an object found
// on the caller's per-P stack, is CheckTimeout's to bound.)
func TestAcquireTimeoutCountsFromTheStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slow atomic.Bool
		f := &fakeMgr{recycle: func(ctx context.Context, o *obj, m manager.Metrics) error {
			if slow.Load() {
				time.Sleep(200 * time.Millisecond) // a slow check that fails
				return errFake
			}
			return nil
		}}
		f.close = func(*obj) { time.Sleep(time.Second) } // the slot frees late
		p := newPool(t, f, pool.Config{MaxSize: 1, AcquireTimeout: 300 * time.Millisecond})
		fill(t, p, 1)
		p.DropHints() // found by the slow path's scan
		slow.Store(true)
		start := time.Now()
		_, err := p.Acquire(context.Background())
		require.ErrorIs(t, err, pool.ErrTimeout)
		require.Equal(t, 300*time.Millisecond, time.Since(start))
	})
}

// With AcquireTimeout set, an Acquire whose connect fails retries, with
// pauses, within its deadline (DESIGN.md, invariant 27): a server down for
// less than that costs no failed Acquire. At the deadline the Acquire
// returns the last connect error; an object released meanwhile is taken at
// once; without AcquireTimeout a connect error ends the Acquire.
func TestAcquireRetriesFailedConnectsWithinItsDeadline(t *testing.T) {
	t.Run("OutageShorterThanTheDeadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var down atomic.Bool
			down.Store(true)
			p := newPool(t, outage(&down), pool.Config{MaxSize: 4, AcquireTimeout: 2 * time.Second})
			go func() {
				time.Sleep(700 * time.Millisecond)
				down.Store(false)
			}()
			start := time.Now()
			var wg sync.WaitGroup
			var failed atomic.Int32
			for range 8 {
				wg.Go(func() {
					l, err := p.Acquire(context.Background())
					if err != nil {
						failed.Add(1)
						return
					}
					time.Sleep(10 * time.Millisecond)
					l.Release()
				})
			}
			wg.Wait()
			require.Zero(t, failed.Load(), "no Acquire failed")
			took := time.Since(start)
			require.GreaterOrEqual(t, took, 700*time.Millisecond)
			require.Less(t, took, 700*time.Millisecond+250*time.Millisecond, "within one pause of the recovery")
			st := p.Stats()
			require.NotZero(t, st.ConnectErrors)
			require.Zero(t, st.Timeouts)
		})
	})
	t.Run("DeadlineReturnsTheLastConnectError", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var n atomic.Int32
			f := &fakeMgr{connect: func(context.Context) error {
				return fmt.Errorf("refused #%d", n.Add(1))
			}}
			p := newPool(t, f, pool.Config{MaxSize: 1, AcquireTimeout: time.Second})
			start := time.Now()
			_, err := p.Acquire(context.Background())
			require.Equal(t, time.Second, time.Since(start))
			require.ErrorIs(t, err, pool.ErrTimeout)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.Contains(t, err.Error(), fmt.Sprintf("pool: connect: refused #%d", n.Load()), "the last connect error")
			require.Greater(t, n.Load(), int32(5), "it retried")
			require.Less(t, n.Load(), int32(20), "with pauses")
			require.Equal(t, uint64(1), p.Stats().Timeouts)
		})
	})
	t.Run("ContextDeadline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var down atomic.Bool
			down.Store(true)
			p := newPool(t, outage(&down), pool.Config{MaxSize: 1, AcquireTimeout: time.Minute})
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := p.Acquire(ctx)
			require.Equal(t, 500*time.Millisecond, time.Since(start), "the earlier of the two deadlines")
			require.ErrorIs(t, err, errFake)
			require.ErrorIs(t, err, context.DeadlineExceeded)
		})
	})
	t.Run("ReleasedObjectComesFirst", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var down atomic.Bool
			p := newPool(t, outage(&down), pool.Config{MaxSize: 2, AcquireTimeout: 5 * time.Second})
			held := acquire(t, p)
			down.Store(true)
			go func() {
				time.Sleep(333 * time.Millisecond)
				held.Release()
			}()
			start := time.Now()
			l := acquire(t, p)
			require.Equal(t, 333*time.Millisecond, time.Since(start), "taken as it was released")
			require.Equal(t, int64(1), l.Value().id)
			l.Release()
		})
	})
	t.Run("NoAcquireTimeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var down atomic.Bool
			down.Store(true)
			p := newPool(t, outage(&down), pool.Config{MaxSize: 1})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := p.Acquire(ctx)
			require.ErrorIs(t, err, errFake)
			require.NotErrorIs(t, err, pool.ErrTimeout)
			require.Equal(t, uint64(1), p.Stats().ConnectErrors, "one connect, no retry")
		})
	})
}

// The maintainer's MinIdle connects hold at most half the MaxConnecting
// slots: against a server that does not answer (each connect hangs until
// ConnectTimeout), a caller's connect still starts at once, and once the
// server answers again it succeeds without waiting for the hung ones.
func TestBackgroundConnectsLeaveRoomForCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var blackhole atomic.Bool
		blackhole.Store(true)
		f := &fakeMgr{connect: func(ctx context.Context) error {
			if blackhole.Load() {
				<-ctx.Done() // SYNs dropped: the dial hangs until ConnectTimeout
				return ctx.Err()
			}
			return nil
		}}
		p := newPool(t, f, pool.Config{MaxSize: 8, MinIdle: 8, MaxConnecting: 4, ConnectTimeout: 10 * time.Second})
		synctest.Wait()
		require.Equal(t, 2, p.Stats().Connecting, "the maintainer holds half the MaxConnecting slots")
		blackhole.Store(false) // healed, with the maintainer's connects still hung
		start := time.Now()
		l := acquire(t, p)
		require.Zero(t, time.Since(start), "the caller's connect did not wait behind the maintainer's")
		l.Release()
	})
}
