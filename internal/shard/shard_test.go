package shard_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/internal/ptest"
	"github.com/poolkit/poolkit/internal/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLocalIsLIFOUpToDepth(t *testing.T) {
	ptest.OneP(t)
	l := shard.NewLocal[int](4, nil)
	for i := range 4 {
		require.True(t, l.Push(i), "push %d", i)
	}
	require.False(t, l.Push(99), "a full stack refuses")
	require.Equal(t, 4, l.Len())
	requirePopsThenEmpty(t, l, 3, 2, 1, 0)
	require.Equal(t, uint64(4), l.Stats().Hits, "every successful Pop is counted")
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
