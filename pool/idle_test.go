package pool_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/internal/cacheline"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// An idle object that no per-P stack or exchange points at is still found
// (by the registry scan, counted as a steal) rather than replaced by a
// connect, and then handed out with its checks.
func TestIdleObjectWithoutHintIsFound(t *testing.T) { run(t, testIdleObjectWithoutHintIsFound) }

func testIdleObjectWithoutHintIsFound(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 2})
	a := acquire(t, p)
	id := a.Value().id
	a.Release()
	p.DropHints()
	require.Equal(t, 1, p.Stats().Idle)
	b := acquire(t, p)
	require.Equal(t, id, b.Value().id)
	st := p.Stats()
	require.Equal(t, uint64(1), st.Created)
	require.Equal(t, uint64(1), p.PathStats().Steals)
	require.Equal(t, int64(1), f.recycles.Load())
	b.Release()
}

// A hint whose object was claimed another way is stale: it is dropped, not
// counted as a local hit, and never hands the object to a second holder.
func TestStaleHintIsDropped(t *testing.T) { run(t, testStaleHintIsDropped) }

func testStaleHintIsDropped(t *testing.T, mode testMode) {
	p := mode.newPool(t, &fakeMgr{}, pool.WithLocalDepth(pool.Config{MaxSize: 1}, 1))
	a := acquire(t, p)
	a.Release() // a hint on this P's stack (or, after a migration, another's)
	p.DropHints()
	a = acquire(t, p) // claimed by the scan
	a.Release()       // a fresh hint
	// The reaper claims the object and gives it back: the fresh hint and
	// the one the give-back leaves point at the same idle object.
	p.Reap()
	b := acquire(t, p)
	require.True(t, b.Value().inUse.CompareAndSwap(false, true))
	c, err := p.TryAcquire(t.Context()) // the other hint is stale: no second holder
	require.ErrorIs(t, err, pool.ErrExhausted)
	require.Zero(t, c)
	b.Value().inUse.Store(false)
	b.Release()
	st := p.Stats()
	require.Equal(t, uint64(1), st.Created)
	require.LessOrEqual(t, p.PathStats().LocalHits+p.PathStats().ExchangeHits+p.PathStats().Steals, uint64(3))
	require.Equal(t, uint64(3), st.Acquires)
}

// Metrics.ID numbers objects from 1 in connect order, and Recycle sees it.
func TestMetricsID(t *testing.T) { run(t, testMetricsID) }

func testMetricsID(t *testing.T, mode testMode) {
	var seen []uint64
	f := &fakeMgr{}
	f.recycle = func(_ context.Context, _ *obj, m manager.Metrics) error {
		seen = append(seen, m.ID)
		return nil
	}
	p := mode.newPool(t, f, pool.Config{MaxSize: 2})
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

// Shrinking closes the surplus and no more: objects already queued for
// Manager.Close (which keep their slots until it returns) are not surplus a
// second time, on release or in a reaping pass.
func TestShrinkClosesOnlyTheSurplus(t *testing.T) {
	for _, via := range []string{"release", "reap"} {
		runSub(t, via, func(t *testing.T, mode testMode) {
			unblock := make(chan struct{})
			f := &fakeMgr{close: func(*obj) { <-unblock }}
			p := mode.newPool(t, f, pool.Config{MaxSize: 10})
			var ls []pool.Lease[*obj]
			for range 10 {
				ls = append(ls, acquire(t, p))
			}
			if via == "reap" {
				for _, l := range ls {
					l.Release()
				}
			}
			p.SetMaxSize(5)
			if via == "release" {
				for _, l := range ls {
					l.Release()
				}
			} else {
				p.Reap()
				p.Reap()
			}
			require.Equal(t, 5, settle(t, p).Closing)
			p.Reap() // the maintainer may reap too: still nothing more
			st := p.Stats()
			require.Equal(t, 5, st.Closing)
			require.Equal(t, 5, st.Idle)
			close(unblock)
			st = settle(t, p)
			require.Equal(t, 5, st.Live)
			require.Equal(t, uint64(5), st.ClosedBy[pool.CloseShrink])
		})
	}
}

// relCheckMgr is a fakeMgr with a ReleaseChecker that reports calls made
// while the object is held by someone (its in-use flag set).
type relCheckMgr struct {
	*fakeMgr
	onHeld atomic.Int32
}

func (m *relCheckMgr) CheckRelease(o *obj) error {
	time.Sleep(20 * time.Microsecond)
	if o.inUse.Load() {
		m.onHeld.Add(1)
	}
	return nil
}

// Two copies of one lease released at once (a race of the caller's): one
// panics before touching the object, so the manager's release check never
// runs on an object already handed to someone else.
func TestConcurrentDoubleReleaseNeverChecksAHandedOnObject(t *testing.T) {
	m := &relCheckMgr{fakeMgr: &fakeMgr{}}
	p := newPool(t, m, pool.Config{MaxSize: 1})
	for range 300 {
		l := acquire(t, p)
		var panics atomic.Int32
		var wg sync.WaitGroup
		releaseTwice(&wg, l, &panics)
		wg.Go(func() {
			l2, err := p.Acquire(context.Background())
			if err != nil {
				return
			}
			o := l2.Value()
			o.inUse.Store(true)
			time.Sleep(100 * time.Microsecond)
			o.inUse.Store(false)
			l2.Release()
		})
		wg.Wait()
		require.Equal(t, int32(1), panics.Load())
	}
	require.Zero(t, m.onHeld.Load(), "CheckRelease ran on an object held by another lease")
}

// With a pointer-sized T an entry is 128 bytes (allocated with a 128-byte
// pad, in a 256-byte size class that keeps it 128-byte aligned) and its
// Metrics starts at offset 64: the 64-byte copy into Recycle's arguments
// reads one cache line, and does not stall on store forwarding (decision
// 0006).
func TestEntryLayout(t *testing.T) {
	off, size := pool.EntryLayout()
	require.Equal(t, uintptr(64), off, "offset of entry.m")
	require.Equal(t, uintptr(128), size, "size of entry")
}

// TestPoolHotFieldsShareOneLine checks the Pool's layout: the fields every
// Acquire and Release reads lie in its first cache line, and the fields
// the slow paths write begin past it, so that a slow path never takes that
// line from the fast paths of other Ps (decision 0009); a Pool's size class
// keeps the allocation aligned to a cache line.
func TestPoolHotFieldsShareOneLine(t *testing.T) {
	hotEnd, firstWritten := pool.PoolLayout()
	require.LessOrEqual(t, hotEnd, uintptr(cacheline.Size), "the fast paths' fields end within the first line")
	require.GreaterOrEqual(t, firstWritten, uintptr(cacheline.Size), "the slow paths' fields start past it")
}

// TestEntriesShareNoCacheLine checks that no two objects' entries have bytes
// in one cache line (of cacheline.Size), whatever T's size: every Acquire
// and Release writes its entry, and two Ps using neighbouring entries would
// otherwise take the line from each other on every operation (decision 0009).
func TestEntriesShareNoCacheLine(t *testing.T) {
	t.Run("Pointer", func(t *testing.T) { checkEntryLines(t, func() *obj { return &obj{} }) })
	t.Run("Interface", func(t *testing.T) { checkEntryLines(t, func() any { return &obj{} }) })
	t.Run("3Words", func(t *testing.T) { checkEntryLines(t, func() [3]uintptr { return [3]uintptr{} }) })
	t.Run("9Words", func(t *testing.T) { checkEntryLines(t, func() [9]uintptr { return [9]uintptr{} }) })
	t.Run("Byte", func(t *testing.T) { checkEntryLines(t, func() byte { return 0 }) })
}

func checkEntryLines[T any](t *testing.T, mk func() T) {
	const n = 64
	p, err := pool.New[T](&makeMgr[T]{mk: mk}, pool.Config{MaxSize: n})
	require.NoError(t, err)
	defer p.Close(context.Background())
	var ls []pool.Lease[T]
	for range n {
		l, err := p.Acquire(context.Background())
		require.NoError(t, err)
		ls = append(ls, l)
	}
	for _, l := range ls {
		l.Release()
	}
	spans := p.EntrySpans()
	require.Len(t, spans, n)
	owner := map[uintptr]int{}
	for i, sp := range spans {
		for line := sp[0] / cacheline.Size; line <= (sp[1]-1)/cacheline.Size; line++ {
			if o, ok := owner[line]; ok {
				t.Fatalf("entries %d and %d share the cache line at %#x", o, i, line*cacheline.Size)
			}
			owner[line] = i
		}
	}
}

// makeMgr makes objects with mk and checks nothing.
type makeMgr[T any] struct{ mk func() T }

func (m *makeMgr[T]) Connect(context.Context) (T, error)                { return m.mk(), nil }
func (m *makeMgr[T]) Recycle(context.Context, T, manager.Metrics) error { return nil }
func (m *makeMgr[T]) Close(T) error                                     { return nil }
