package shard_test

import (
	"runtime"
	"sync"
	"sync/atomic"
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

func TestStealableIsLIFOUpToDepth(t *testing.T) {
	onOneP(t, func() {
		s := shard.NewStealable[int](4)
		vals := make([]int, 5)
		for i := range 4 {
			require.True(t, s.Push(&vals[i]))
		}
		require.False(t, s.Push(&vals[4]))
		require.Equal(t, 4, s.Len())
		for i := 3; i >= 0; i-- {
			require.Same(t, &vals[i], s.Pop())
		}
		require.Nil(t, s.Pop())
		require.Nil(t, s.Steal())
	})
}

func TestDepthOutOfRangePanics(t *testing.T) {
	for _, d := range []int{0, -1, shard.MaxDepth + 1} {
		require.PanicsWithValue(t, "shard: depth must be in [1, MaxDepth]", func() { shard.NewLocal[int](d, nil) })
		require.PanicsWithValue(t, "shard: depth must be in [1, MaxDepth]", func() { shard.NewStealable[int](d) })
	}
}

func TestStealTakesOldestAndReusesHoles(t *testing.T) {
	onOneP(t, func() {
		s := shard.NewStealable[int](3)
		v := []int{0, 1, 2, 3}
		for i := range 3 {
			require.True(t, s.Push(&v[i]))
		}
		require.Same(t, &v[0], s.Steal(), "stealers take the oldest slot")
		require.True(t, s.Push(&v[3]), "a hole left by a steal is reused when the stack is full")
		got := map[*int]bool{}
		for x := s.Pop(); x != nil; x = s.Pop() {
			got[x] = true
		}
		require.Len(t, got, 3)
		require.Equal(t, uint64(1), s.Stats().Steals)
	})
}

func TestStealFindsValuesOnOtherPs(t *testing.T) {
	s := shard.NewStealable[int](8)
	const n = 64
	vals := make([]int, n)
	var wg sync.WaitGroup
	var pushed atomic.Int64
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				if s.Push(&vals[i]) {
					pushed.Add(1)
				} else {
					vals[i] = -1 // not stored
				}
			}
		})
	}
	wg.Wait()
	seen := map[*int]bool{}
	for x := s.Steal(); x != nil; x = s.Steal() {
		require.False(t, seen[x], "a pointer was stolen twice")
		seen[x] = true
	}
	require.Equal(t, int(pushed.Load()), len(seen), "every pushed pointer is found by Steal")
	require.Equal(t, 0, s.Len())
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
	s := shard.NewStealable[int](8)
	x := new(int)
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		s.Push(x)
		s.Pop()
	}))
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		s.Push(x)
		s.Steal()
	}))
}
