package pool_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

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
		for range 4 {
			_, err := p.TryAcquire(context.Background())
			require.ErrorIs(t, err, pool.ErrExhausted)
		}
		synctest.Wait()
		var ls []pool.Lease[*obj]
		for range 4 {
			l, err := p.TryAcquire(context.Background())
			require.NoError(t, err, "the burst's connects made objects at once")
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
