package shard_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/internal/cacheline"
	"github.com/poolkit/poolkit/internal/shard"
	"github.com/poolkit/poolkit/internal/testutil/ptest"
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

// TestStacksShareNoCacheLine checks that no two Ps' stacks, nor their spills,
// have bytes in one cache line (of cacheline.Size, which covers the
// hardware's line and the pair its prefetcher fetches): the per-P stacks are
// owner-only, and a line written by two Ps moves between their caches on
// every Push and Pop.
func TestStacksShareNoCacheLine(t *testing.T) {
	prev := runtime.GOMAXPROCS(8)
	defer runtime.GOMAXPROCS(prev)
	check := func(t *testing.T, slots, spills [][2]uintptr) {
		owner := map[uintptr]string{}
		claim := func(what string, r [2]uintptr) {
			if r[0] == r[1] {
				return
			}
			for line := r[0] / cacheline.Size; line <= (r[1]-1)/cacheline.Size; line++ {
				if o, ok := owner[line]; ok {
					t.Fatalf("%s and %s share the cache line at %#x", o, what, line*cacheline.Size)
				}
				owner[line] = what
			}
		}
		for i := range slots {
			claim(fmt.Sprintf("stack %d", i), slots[i])
			claim(fmt.Sprintf("spill %d", i), spills[i])
		}
		require.Len(t, slots, 8)
	}
	for _, depth := range []int{1, 4, 7, 64} {
		t.Run(fmt.Sprintf("Pointers/Depth=%d", depth), func(t *testing.T) {
			for range 50 { // many tables, so that many placements are tried
				slots, spills := shard.NewLocal[*int](depth, nil).Regions()
				check(t, slots, spills)
			}
		})
		t.Run(fmt.Sprintf("Bytes/Depth=%d/Spill", depth), func(t *testing.T) {
			for range 50 {
				slots, spills := shard.NewLocalSpill[byte](depth, 8, nil).Regions()
				check(t, slots, spills)
			}
		})
		t.Run(fmt.Sprintf("Structs/Depth=%d/Spill", depth), func(t *testing.T) {
			for range 50 {
				slots, spills := shard.NewLocalSpill[[3]uintptr](depth, 4, nil).Regions()
				check(t, slots, spills)
			}
		})
	}
}

// DrainAll hands every value of every P's stack and spill to drop, once a
// Local is out of use, and leaves it empty.
func TestDrainAllEmptiesEveryStackAndSpill(t *testing.T) {
	l := shard.NewLocalSpill[int](2, 4, nil)
	const n = 64
	ptest.OnEachP(runtime.GOMAXPROCS(0), func() {
		for range n {
			l.Push(1)
		}
	})
	pushed := l.Len()
	if pushed == 0 {
		t.Fatal("nothing was kept")
	}
	got := 0
	l.DrainAll(func(v int) { got += v })
	if got != pushed {
		t.Fatalf("DrainAll dropped %d values, the Local held %d", got, pushed)
	}
	if l.Len() != 0 {
		t.Fatalf("%d values left", l.Len())
	}
	if _, ok := l.Pop(); ok {
		t.Fatal("a value left after DrainAll")
	}
}
