package shard_test

import (
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/internal/testutil/ptest"
	"github.com/poolkit/poolkit/shard"
)

// The implementation's own tests (internal/shard) cover the stacks, the
// spill, the build variants and GOMAXPROCS changes; these check that Local
// passes each call through and keeps the promises its docs make.

func TestLocalIsNewestFirstAcrossStackAndSpill(t *testing.T) {
	ptest.OneP(t)
	l := shard.NewLocalSpill[int](2, 2, nil)
	require.Equal(t, []int{2, 2, 1}, []int{l.Depth(), l.Spill(), l.Procs()})
	for i := range 4 {
		require.True(t, l.Push(i), "push %d", i)
	}
	require.False(t, l.Push(99), "stack and spill are full")
	require.Equal(t, 4, l.Len())
	for want := 3; want >= 0; want-- {
		v, ok := l.Pop()
		require.True(t, ok)
		require.Equal(t, want, v)
	}
	_, ok := l.Pop()
	require.False(t, ok)
	require.Equal(t, shard.Stats{Hits: 4}, l.Stats())
}

func TestLocalRetireHandsLeftoversToDrop(t *testing.T) {
	var dropped atomic.Int64
	l := shard.NewLocal[int](8, func(int) { dropped.Add(1) })
	ptest.OneP(t)
	for i := range 3 {
		require.True(t, l.Push(i))
	}
	l.Retire()
	require.Zero(t, l.Len())
	require.True(t, ptest.CollectUntil(func() bool { return dropped.Load() == 3 }),
		"every retired value reaches drop (%d of 3)", dropped.Load())
}

// TestPopLeavesNothingReachable: a popped value is collectable, the slot it
// left is zeroed.
func TestPopLeavesNothingReachable(t *testing.T) {
	l := shard.NewLocal[*[64]byte](4, nil)
	var freed atomic.Bool
	ptest.OneP(t)
	a := new([64]byte)
	runtime.AddCleanup(a, func(int) { freed.Store(true) }, 0)
	require.True(t, l.Push(a))
	_, ok := l.Pop()
	require.True(t, ok)
	require.True(t, ptest.CollectUntil(freed.Load))
	runtime.KeepAlive(l)
}

func TestLocalAllocatesNothing(t *testing.T) {
	l := shard.NewLocalSpill[[]byte](2, 8, nil)
	buf := make([]byte, 64)
	require.Zero(t, testing.AllocsPerRun(1000, func() {
		for range 6 { // through the spill and back
			l.Push(buf)
		}
		for range 6 {
			l.Pop()
		}
	}))
}

func TestBadDepthPanics(t *testing.T) {
	for _, d := range []int{0, -1, shard.MaxDepth + 1} {
		require.PanicsWithValue(t, "shard: depth must be in [1, MaxDepth]", func() { shard.NewLocal[int](d, nil) })
	}
	require.PanicsWithValue(t, "shard: spill must be in [0, MaxDepth]", func() { shard.NewLocalSpill[int](1, -1, nil) })
}
