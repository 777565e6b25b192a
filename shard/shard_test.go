package shard_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// onOneP runs f with GOMAXPROCS 1, so that push and pop run on the same P.
func onOneP(t *testing.T, f func()) {
	t.Helper()
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	f()
}

func TestLocalIsLIFOUpToDepth(t *testing.T) {
	onOneP(t, func() {
		l := shard.NewLocal[int](4, nil)
		for i := range 4 {
			require.True(t, l.Push(i), "push %d", i)
		}
		require.False(t, l.Push(99), "a full stack refuses")
		require.Equal(t, 4, l.Len())
		requirePopsThenEmpty(t, l, 3, 2, 1, 0)
		require.Equal(t, uint64(4), l.Stats().Hits, "every successful Pop is counted")
	})
}

// requirePopsThenEmpty pops want, in order, from l, then finds it empty.
func requirePopsThenEmpty(t *testing.T, l *shard.Local[int], want ...int) {
	t.Helper()
	for _, w := range want {
		v, ok := l.Pop()
		require.True(t, ok)
		require.Equal(t, w, v)
	}
	_, ok := l.Pop()
	require.False(t, ok)
	require.Equal(t, 0, l.Len())
}

func TestDepthOutOfRangePanics(t *testing.T) {
	for _, d := range []int{0, -1, shard.MaxDepth + 1} {
		require.PanicsWithValue(t, "shard: depth must be in [1, MaxDepth]", func() { shard.NewLocal[int](d, nil) })
	}
}

func TestZeroAllocations(t *testing.T) {
	l := shard.NewLocal[[]byte](8, nil)
	buf := make([]byte, 64)
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		l.Push(buf)
		l.Pop()
	}))
	// Through the spill: a full stack moves, an empty one refills.
	ls := shard.NewLocalSpill[[]byte](2, 8, nil)
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		for range 6 {
			ls.Push(buf)
		}
		for range 6 {
			ls.Pop()
		}
	}))
}
