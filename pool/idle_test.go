package pool_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// An idle object that no per-P stack or exchange points at is still found
// (by the registry scan, counted as a steal) rather than replaced by a
// connect, and then handed out with its checks.
func TestIdleObjectWithoutHintIsFound(t *testing.T) {
	f := &fakeMgr{}
	p := newPool(t, f, pool.Config{MaxSize: 2})
	a := acquire(t, p)
	id := a.Value().id
	a.Release()
	p.DropHints()
	require.Equal(t, 1, p.Stats().Idle)
	b := acquire(t, p)
	require.Equal(t, id, b.Value().id)
	st := p.Stats()
	require.Equal(t, uint64(1), st.Created)
	require.Equal(t, uint64(1), st.Steals)
	require.Equal(t, int64(1), f.recycles.Load())
	b.Release()
}

// A hint whose object was claimed another way is stale: it is dropped, not
// counted as a local hit, and never hands the object to a second holder.
func TestStaleHintIsDropped(t *testing.T) {
	p := newPool(t, &fakeMgr{}, pool.Config{MaxSize: 1, LocalDepth: 1})
	a := acquire(t, p)
	a.Release() // a hint on this P's stack (or, after a migration, another's)
	p.DropHints()
	a = acquire(t, p) // claimed by the scan
	a.Release()       // a fresh hint
	// The reaper claims the object and gives it back: the fresh hint and
	// the one the give-back leaves point at the same idle object.
	p.Reap(-1)
	b := acquire(t, p)
	require.True(t, b.Value().inUse.CompareAndSwap(false, true))
	c, err := p.TryAcquire(t.Context()) // the other hint is stale: no second holder
	require.ErrorIs(t, err, pool.ErrExhausted)
	require.Zero(t, c)
	b.Value().inUse.Store(false)
	b.Release()
	st := p.Stats()
	require.Equal(t, uint64(1), st.Created)
	require.LessOrEqual(t, st.LocalHits+st.ExchangeHits+st.Steals, uint64(3))
	require.Equal(t, uint64(3), st.Acquires)
}

// Metrics.ID numbers objects from 1 in connect order, and Recycle sees it.
func TestMetricsID(t *testing.T) {
	var seen []uint64
	f := &fakeMgr{}
	f.recycle = func(_ context.Context, _ *obj, m manager.Metrics) error {
		seen = append(seen, m.ID)
		return nil
	}
	p := newPool(t, f, pool.Config{MaxSize: 2})
	a, b := acquire(t, p), acquire(t, p)
	a.Release()
	b.Release()
	acquire(t, p).Release()
	acquire(t, p).Release()
	require.Len(t, seen, 2)
	for _, id := range seen {
		require.Contains(t, []uint64{1, 2}, id)
	}
}
