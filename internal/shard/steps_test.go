package shard_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/internal/shard"
	"github.com/poolkit/poolkit/internal/testutil/ptest"
)

// pushSteps and popSteps are Local.Push and Local.Pop written out with the
// steps a caller inlines (see Local): Enter, Stack, the stack, the spill,
// Exit, and the whole operation after Exit when Stack had no stack.
func pushSteps[T any](l *shard.Local[T], v T) bool {
	s := l.Stack(shard.Enter())
	ok := s.Push(v) || l.PushSpill(s, v)
	shard.Exit()
	if s == nil {
		return l.Push(v)
	}
	return ok
}

func popSteps[T any](l *shard.Local[T]) (T, bool) {
	s := l.Stack(shard.Enter())
	v, ok := s.Pop()
	if !ok {
		v, ok = l.PopSpill(s)
	}
	shard.Exit()
	if s == nil {
		return l.Pop()
	}
	return v, ok
}

// TestStepsAreTheSameStacks: values pushed with the steps pop with Pop and
// the other way round, through the stack and the spill alike, in the same
// order; counts and capacity are shared.
func TestStepsAreTheSameStacks(t *testing.T) {
	ptest.OneP(t)
	l := shard.NewLocalSpill[int](2, 2, nil)
	require.True(t, pushSteps(l, 0))
	require.True(t, l.Push(1))
	require.True(t, pushSteps(l, 2), "0 moves to the spill")
	require.True(t, l.Push(3), "1 moves to the spill")
	require.False(t, pushSteps(l, 4), "stack and spill are full")
	require.Equal(t, 4, l.Len())
	for _, want := range []int{3, 2, 1, 0} { // the stack, then the spill
		v, ok := popSteps(l)
		require.True(t, ok)
		require.Equal(t, want, v)
		require.True(t, l.Push(v))
		v, ok = l.Pop()
		require.True(t, ok)
		require.Equal(t, want, v)
		require.True(t, pushSteps(l, v))
		v, ok = popSteps(l)
		require.True(t, ok)
		require.Equal(t, want, v)
	}
	_, ok := popSteps(l)
	require.False(t, ok)
	require.Equal(t, uint64(12), l.Stats().Hits)
}

// TestStackHasNoStackWithoutAP: Stack returns nil for an id outside the
// table (a P beyond it, or the -1 that Enter returns where nothing is
// pinned), and every step takes a nil stack as a miss that keeps nothing.
func TestStackHasNoStackWithoutAP(t *testing.T) {
	l := shard.NewLocalSpill[int](2, 2, nil)
	require.Nil(t, l.Stack(-1))
	require.Nil(t, l.Stack(l.Procs()))
	var s *shard.Stack[int]
	require.False(t, s.Push(1))
	require.False(t, l.PushSpill(s, 1))
	_, ok := s.Pop()
	require.False(t, ok)
	_, ok = l.PopSpill(s)
	require.False(t, ok)
	require.Zero(t, l.Len())

	pid := shard.Enter()
	shard.Exit()
	if shard.RandomIDs || ptest.Race {
		require.Equal(t, -1, pid, "nothing is pinned in the synchronised builds")
	} else {
		require.True(t, pid >= 0 && pid < runtime.GOMAXPROCS(0), "pid %d", pid)
	}
}

// TestStepsGrowTheTable: on a P beyond the table (GOMAXPROCS grew), Stack
// has no stack until a Pop or Push grows the table, as the steps do.
func TestStepsGrowTheTable(t *testing.T) {
	if shard.RandomIDs || ptest.Race {
		t.Skip("Stack never has a stack in the synchronised builds")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l := shard.NewLocal[int](4, nil)
	require.Equal(t, 1, l.Procs())
	runtime.GOMAXPROCS(4)
	ptest.OnEachP(4, func() { // P ids 0 to 3
		// (No Pop: another goroutine's growth may retire the table this
		// value went to.)
		assert.True(t, pushSteps(l, 1))
	})
	require.Equal(t, 4, l.Procs(), "the Ps beyond the table grew it")
}
