package shard_test

import (
	"math"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/internal/shard"
	"github.com/poolkit/poolkit/internal/testutil/ptest"
)

// TestSpillTakesWhatTheStackCannot: a Push on a full stack moves the stack's
// oldest half to the spill, so Pop returns values newest first across both
// tiers.
func TestSpillTakesWhatTheStackCannot(t *testing.T) {
	ptest.OneP(t)
	l := shard.NewLocalSpill[int](2, 4, nil)
	requireFillsThenPopsNewestFirst(t, l, 6)
	require.Equal(t, shard.Stats{Hits: 6}, l.Stats(), "spill pops on the own P are hits, not steals")
}

// TestSpillTakesTheOldestItHasRoomFor: when the spill has room for part of
// the half-stack only, the oldest values move, and the order still holds.
func TestSpillTakesTheOldestItHasRoomFor(t *testing.T) {
	ptest.OneP(t)
	requireFillsThenPopsNewestFirst(t, shard.NewLocalSpill[int](4, 1, nil), 5)
}

// TestSpillOrderWithOddAndUnitDepths: the batch is half the depth rounded
// up; the order holds for a depth of 1 (batch 1) and an odd one (3, batch 2).
func TestSpillOrderWithOddAndUnitDepths(t *testing.T) {
	ptest.OneP(t)
	requireFillsThenPopsNewestFirst(t, shard.NewLocalSpill[int](1, 4, nil), 5)
	requireFillsThenPopsNewestFirst(t, shard.NewLocalSpill[int](3, 4, nil), 7)
}

// requireFillsThenPopsNewestFirst pushes 0 to n-1 on an empty l whose
// capacity is n, finds it full, then pops n-1 down to 0.
func requireFillsThenPopsNewestFirst(t *testing.T, l *shard.Local[int], n int) {
	t.Helper()
	want := make([]int, n)
	for i := range n {
		require.True(t, l.Push(i), "push %d", i)
		want[n-1-i] = i
	}
	require.False(t, l.Push(99), "stack and spill full: refused")
	require.Equal(t, n, l.Len())
	requirePopsThenEmpty(t, l, want...)
}

// TestSpillBatchesCrossTheWrap: the batch moves keep the order lap after lap
// across the wrap of the spill's uint32 positions.
func TestSpillBatchesCrossTheWrap(t *testing.T) {
	ptest.OneP(t)
	l := shard.NewLocalSpill[int](4, 8, nil)
	l.StartSpillAt(0, math.MaxUint32-5)
	for lap := range 4 {
		for i := range 12 {
			require.True(t, l.Push(i), "lap %d push %d", lap, i)
		}
		requirePopsThenEmpty(t, l, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
	}
}

// TestSpillPathZeroesWhatItMoves: values that went through the spill (moved
// there from the stack, refilled back) become collectable once popped: the
// stack slots and spill cells they left are zeroed.
func TestSpillPathZeroesWhatItMoves(t *testing.T) {
	ptest.OneP(t)
	l := shard.NewLocalSpill[*[64]byte](4, 4, nil)
	var freed atomic.Int64
	for range 7 { // the stack ends one short of full: a slot the move left is not reused
		a := new([64]byte)
		runtime.AddCleanup(a, func(int) { freed.Add(1) }, 0)
		require.True(t, l.Push(a))
	}
	for range 7 {
		_, ok := l.Pop()
		require.True(t, ok)
	}
	require.True(t, ptest.CollectUntil(func() bool { return freed.Load() == 7 }), "freed %d of 7", freed.Load())
	runtime.KeepAlive(l) // else l, slots and cells and all, is collected itself
}

func TestSpillSizeIsAPowerOfTwo(t *testing.T) {
	require.Equal(t, 4, shard.NewLocalSpill[int](1, 3, nil).Spill())
	require.Equal(t, 1, shard.NewLocalSpill[int](1, 1, nil).Spill())
	require.Equal(t, 0, shard.NewLocal[int](1, nil).Spill())
	for _, s := range []int{-1, shard.MaxDepth + 1} {
		require.PanicsWithValue(t, "shard: spill must be in [0, MaxDepth]", func() { shard.NewLocalSpill[int](1, s, nil) })
	}
}

// TestPopStealsFromOtherPsSpills fills every P's spill, then pops from one
// goroutine: values on the Ps it is not running on are reachable only by
// stealing, oldest first.
func TestPopStealsFromOtherPsSpills(t *testing.T) {
	prev := runtime.GOMAXPROCS(4)
	defer runtime.GOMAXPROCS(prev)
	l := shard.NewLocalSpill[int](1, 4, nil)
	const perP = 3
	for pid := range 4 {
		for j := range perP {
			require.True(t, l.PushSpillAt(pid, pid*perP+j))
		}
	}
	seen := map[int]bool{}
	for {
		v, ok := l.Pop()
		if !ok {
			break
		}
		require.False(t, seen[v], "value %d popped twice", v)
		seen[v] = true
	}
	require.Len(t, seen, 4*perP, "every spilled value is found, whichever P holds it")
	st := l.Stats()
	require.Equal(t, uint64(4*perP), st.Hits+st.Steals)
	if !shard.RandomIDs {
		// (Without P ids each Pop draws a stack at random and counts what
		// it finds there as its own.)
		require.NotZero(t, st.Steals)
	}
}

func TestSpillStealsOldestAndReusesCellsLapAfterLap(t *testing.T) {
	for _, start := range []uint32{0, 1<<32 - 3} { // the second crosses the wrap of the positions
		l := shard.NewLocalSpill[int](1, 2, nil)
		l.StartSpillAt(0, start)
		next, want := 0, 0
		steal := func() {
			t.Helper()
			v, ok := l.StealAt(0)
			require.True(t, ok)
			require.Equal(t, want, v, "steals take the oldest value")
			want++
		}
		for range 100 {
			for l.PushSpillAt(0, next) {
				next++
			}
			require.Equal(t, want+2, next, "the spill holds 2")
			steal()
			require.True(t, l.PushSpillAt(0, next), "the cell a steal freed is reused")
			next++
			require.False(t, l.PushSpillAt(0, -1), "full again")
			steal()
			steal()
			_, ok := l.StealAt(0)
			require.False(t, ok)
		}
	}
}

// TestLocalSpillStress moves a fixed set of tokens through a Local with a
// small stack and spill from many goroutines while GOMAXPROCS changes and the
// Local is retired: no token is ever held twice, and at the end every token is
// accounted for exactly once.
func TestLocalSpillStress(t *testing.T) {
	const tokens = 256
	all := make([]token, tokens)
	free := make(chan *token, tokens)
	for i := range all {
		free <- &all[i]
	}
	back := func(x *token) {
		select {
		case free <- x:
		default:
			t.Error("more tokens came back than exist")
		}
	}
	l := shard.NewLocalSpill[*token](3, 8, back) // depth 3: batches of 2 race the steals
	churnLocal(l, func() {
		x, ok := l.Pop()
		if !ok {
			select {
			case x = <-free:
			default:
				runtime.Gosched()
				return
			}
		}
		take(t, x)
		give(x)
		if !l.Push(x) {
			back(x)
		}
	})
	l.Retire()
	ptest.CollectUntil(func() bool { return len(free) >= tokens })
	require.Equal(t, tokens, len(free), "every token is back exactly once")
	seen := map[*token]bool{}
	for range tokens {
		x := <-free
		require.False(t, seen[x], "a token came back twice")
		seen[x] = true
	}
}
