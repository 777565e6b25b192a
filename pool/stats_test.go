package pool_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// Stats tell the truth (DESIGN.md, invariant 26): every counter only rises,
// and the connection states sum to Live, objects under a health check
// included.

// Acquires never falls. An Acquire whose object, found on this P's stack,
// fails its check was counted when the object was popped; the snapshot
// taken once the check has failed must not count one fewer.
func TestAcquiresNeverFalls(t *testing.T) {
	var p *pool.Pool[*obj]
	var during, after uint64
	var fail atomic.Bool
	f := &fakeMgr{
		recycle: func(context.Context, *obj, manager.Metrics) error {
			if fail.Load() {
				during = p.Stats().Acquires
				return errFake
			}
			return nil
		},
		connect: func(context.Context) error {
			if fail.Load() {
				after = p.Stats().Acquires // the check has failed
			}
			return nil
		},
	}
	p = newPool(t, f, pool.Config{MaxSize: 2})
	fill(t, p, 1)
	fail.Store(true)
	// On this goroutine, so that the object comes from this P's stack (where
	// fill left its hint); a pop elsewhere counts nothing in advance.
	acquire(t, p).Release()
	require.GreaterOrEqual(t, after, during, "Acquires fell from %d to %d", during, after)
	require.Equal(t, uint64(2), p.Stats().Acquires, "fill's and this one")
}

// While a health check runs, the object it checks is counted (as idle), so
// that Idle + Leased + Connecting + Closing == Live; a check that panics is
// counted, and its object closed.
func TestHealthChecksAreCountedAndTheirObjectsHaveAState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inCheck := make(chan struct{})
		var panicking atomic.Bool
		f := &fakeMgr{recycle: func(ctx context.Context, _ *obj, _ manager.Metrics) error {
			if panicking.Load() {
				panic("health check exploded")
			}
			<-inCheck
			return nil
		}}
		p := newPool(t, f, pool.Config{MaxSize: 4, HealthCheckPeriod: time.Second})
		fill(t, p, 3)
		time.Sleep(3 * time.Second)
		synctest.Wait() // the pass holds the three objects in Recycle
		st := p.Stats()
		require.Equal(t, 3, st.Live)
		require.Equal(t, st.Live, st.Idle+st.Leased+st.Connecting+st.Closing, "the states sum to Live: %+v", st)
		require.Equal(t, 3, st.Idle, "under a health check, idle")
		require.Equal(t, uint64(3), st.HealthChecks)
		close(inCheck)
		synctest.Wait()
		panicking.Store(true)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		st = p.Stats()
		require.Equal(t, uint64(3), st.ClosedBy[pool.CloseHealthCheck], "the panicking checks closed their objects")
		require.Equal(t, uint64(6), st.HealthChecks, "and are counted")
		require.Zero(t, st.Live)
	})
}
