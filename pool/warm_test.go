package pool_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/pool"
)

// Warm returns nil only once max(MinIdle, 1) objects are connected (DESIGN.md,
// invariant 22): connects in flight do not count, the first connect error
// ends it at once, and a MinIdle above a lowered MaxSize is capped.

func TestWarmReturnsTheFirstConnectErrorAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int32
		f := &fakeMgr{connect: func(context.Context) error {
			time.Sleep(100 * time.Millisecond) // a refusal takes a round trip
			return errors.New("connect " + strings.Repeat("I", int(n.Add(1))))
		}}
		p := newPool(t, f, pool.Config{MaxSize: 2, MinIdle: 1})
		start := time.Now()
		err := p.Warm(context.Background()) // no deadline: Warm must not wait for one
		require.Error(t, err)
		require.Contains(t, err.Error(), "pool: Warm: connect: connect I")
		require.Equal(t, 100*time.Millisecond, time.Since(start), "one connect's time, no retry")
		require.NoError(t, p.Close(context.Background()))
		require.ErrorIs(t, p.Warm(context.Background()), pool.ErrClosed)
	})
}

// The maintainer starts MinIdle's connects as New returns; Warm does not
// count them as objects, though they hold the slots it would use: against a
// server that is down it returns the connect error, never nil.
func TestWarmDoesNotCountConnectsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeMgr{connect: func(context.Context) error {
			time.Sleep(time.Second)
			return errors.New("connection refused")
		}}
		// MaxConnecting 6: the maintainer may hold 3 connects (half of it).
		p := newPool(t, f, pool.Config{MaxSize: 3, MinIdle: 3, MaxConnecting: 6})
		synctest.Wait()
		require.Equal(t, 3, p.Stats().Connecting, "the maintainer's connects hold every slot")
		err := p.Warm(context.Background())
		require.ErrorContains(t, err, "pool: Warm: connect: connection refused")
	})
}

func TestWarmWithoutMinIdleMakesOneObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeMgr{}
		p := newPool(t, f, pool.Config{MaxSize: 4})
		require.NoError(t, p.Warm(context.Background()))
		st := p.Stats()
		require.Equal(t, uint64(1), st.Created)
		require.Equal(t, 1, st.Idle)
		require.NoError(t, p.Warm(context.Background()))
		require.Equal(t, uint64(1), p.Stats().Created, "one object is enough")
	})
}

// Warm counts connected objects whatever their state: leased ones count.
func TestWarmCountsLeasedObjects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, &fakeMgr{}, pool.Config{MaxSize: 2, MinIdle: 2})
		a, b := acquire(t, p), acquire(t, p)
		require.NoError(t, p.Warm(context.Background()))
		require.Equal(t, uint64(2), p.Stats().Created)
		a.Release()
		b.Release()
	})
}

// After SetMaxSize below MinIdle, Warm makes MaxSize objects and returns.
func TestWarmAfterShrinkBelowMinIdleReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		var once sync.Once
		f := &fakeMgr{connect: func(context.Context) error {
			<-gate
			return nil
		}}
		p := newPool(t, f, pool.Config{MaxSize: 4, MinIdle: 4})
		p.SetMaxSize(2)
		done := make(chan error, 1)
		go func() { done <- p.Warm(context.Background()) }()
		synctest.Wait()
		once.Do(func() { close(gate) })
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(time.Minute):
			t.Fatal("Warm did not return after SetMaxSize below MinIdle")
		}
		st := p.Stats()
		require.LessOrEqual(t, st.Live, 2)
		require.Equal(t, 2, st.Live-st.Connecting-st.Closing)
	})
}

// A Warm whose context ends while its connects are slow returns ctx's error;
// the objects those connects make are kept.
func TestWarmContextEndsWhileConnecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeMgr{connect: func(context.Context) error {
			time.Sleep(time.Second)
			return nil
		}}
		p := newPool(t, f, pool.Config{MaxSize: 2, MinIdle: 2})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err := p.Warm(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorContains(t, err, "pool: Warm: ")
		time.Sleep(2 * time.Second)
		synctest.Wait()
		st := p.Stats()
		require.Equal(t, st.Live, st.Idle, "every object made is idle: %+v", st)
		require.GreaterOrEqual(t, st.Idle, 2)
	})
}
