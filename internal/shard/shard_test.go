package shard_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
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

// TestDrainAllSealsTheLocal: after DrainAll a Local keeps nothing more:
// Push (whole, or as the steps) reports false, Pop and Len find nothing,
// Grow reports false, and a P beyond the table (GOMAXPROCS grew) does not
// grow it.
func TestDrainAllSealsTheLocal(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	l := shard.NewLocalSpill[int](2, 4, nil)
	require.True(t, l.Push(1))
	dropped := 0
	l.DrainAll(func(int) { dropped++ })
	require.Equal(t, 1, dropped)
	runtime.GOMAXPROCS(4)
	ptest.OnEachP(4, func() { // P ids 0 to 3, beyond the table from 1
		for range 8 {
			assert.False(t, l.Push(1), "Push on a drained Local")
			assert.False(t, pushSteps(l, 1), "Push steps on a drained Local")
		}
		_, ok := l.Pop()
		assert.False(t, ok, "Pop on a drained Local")
		_, ok = popSteps(l)
		assert.False(t, ok, "Pop steps on a drained Local")
	})
	require.False(t, l.Grow(3), "Grow of a drained Local")
	require.Equal(t, 0, l.Len())
	require.Equal(t, 1, l.Procs(), "a drained Local grew its table")
}

// TestDrainAllRacingPushesLosesNothing: in the builds that pin nothing,
// where no stop-the-world keeps a Push away from a drain, goroutines that
// go on pushing through and after DrainAll lose no value: each value a Push
// kept was handed to the drain, once, and the Local holds nothing after.
func TestDrainAllRacingPushesLosesNothing(t *testing.T) {
	if !shard.RandomIDs && !ptest.Race {
		t.Skip("in the default build a drain's caller stops the world first: no Push runs alongside it")
	}
	const workers, n = 8, 2000
	l := shard.NewLocalSpill[int](64, 256, nil)
	var pushes atomic.Int64
	drained := make(chan struct{})
	kept := make([][]int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			push := func(v int) {
				if l.Push(v) {
					kept[w] = append(kept[w], v)
				}
				pushes.Add(1)
			}
			for i := range n {
				push(w*2*n + i)
				if i%64 == 0 {
					runtime.Gosched()
				}
			}
			<-drained
			for i := range n { // after the drain: all must fail
				push(w*2*n + n + i)
			}
		})
	}
	for pushes.Load() < workers*n/2 {
		runtime.Gosched()
	}
	got := make(map[int]int)
	l.DrainAll(func(v int) { got[v]++ })
	close(drained)
	wg.Wait()
	for w := range workers {
		for _, v := range kept[w] {
			if got[v] != 1 {
				t.Fatalf("value %d was kept by a Push and drained %d times", v, got[v])
			}
			delete(got, v)
		}
	}
	require.Empty(t, got, "drained values no Push kept")
	require.Equal(t, 0, l.Len())
}
