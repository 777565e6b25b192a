//go:build linux

package bytepool_test

import (
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/internal/testutil/ptest"
)

func platformAllocators() []allocator {
	return []allocator{{name: "Mmap", make: func() bytepool.Allocator { return bytepool.NewMmap(false) }}}
}

// gcOffSlack is what a pool may hold beyond what it retains, whatever the
// GC does (Pool.Trim): per class, MaxPending sets of other Ps' stacks of
// replaced tiers, Depth buffers per P each.
func gcOffSlack(s bytepool.Stats, depth int) int64 {
	var slack int64
	for _, c := range s.Classes {
		slack += int64(bytepool.MaxPending*depth*(s.Procs-1)) * int64(c.Size)
	}
	return slack
}

// TestMappedBytesStayWithinBudgetWithGCOff: with the GC off, so that no
// runtime cleanup and no GC tick ever runs, 800 rounds of a burst on every
// P, each followed by Trim, keep the bytes the pool's Mmap has mapped beyond
// what the pool retains within the slack Pool.Trim documents, and the total
// within MaxRetained plus that slack; after each Trim nothing is mapped.
// (Before Trim released what it can reach at once, and retired at most one
// set per class until a GC cycle, 800 rounds left gigabytes mapped.)
func TestMappedBytesStayWithinBudgetWithGCOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const budget = 8 << 20
	m := bytepool.NewMmap(false)
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 4 << 10, MaxSize: 1 << 20, MaxRetained: budget, Allocator: m})
	rounds := 800
	if testing.Short() || ptest.Race {
		rounds = 100
	}
	procs := runtime.GOMAXPROCS(0)
	for round := range rounds {
		ptest.OnEachP(procs, func() {
			held := make([][]byte, 0, 48)
			for i := range cap(held) {
				held = append(held, p.Get((4<<10)<<(i%6)+i))
			}
			for _, b := range held {
				p.Put(b)
			}
		})
		s := p.Stats()
		slack := gcOffSlack(s, bytepool.DefaultDepth)
		if mapped := m.Mapped(); mapped > budget+slack || mapped-s.Retained > slack {
			t.Fatalf("round %d: %d bytes mapped, %d retained; MaxRetained %d, slack %d", round, mapped, s.Retained, budget, slack)
		}
		p.Trim()
		if mapped, s := m.Mapped(), p.Stats(); mapped != 0 || s.Retained != 0 {
			t.Fatalf("round %d, after Trim: %d bytes mapped, %d retained", round, mapped, s.Retained)
		}
	}
}

// Two classes that take the budget from each other in turn, with the GC
// off, so that no GC tick ever releases the tiers the budget replaced: the
// replaced sets do not pile up (a class releases them at once past
// MaxPending), so the mapped bytes stay within MaxRetained plus the slack
// Pool.Trim documents, and Trim releases everything.
func TestClassesTradingTheBudgetStayWithinBoundsWithGCOff(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const budget = 6 << 20
	m := bytepool.NewMmap(false)
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 4 << 10, MaxSize: 1 << 20, MaxRetained: budget, Allocator: m})
	rounds := 1000
	if testing.Short() || ptest.Race {
		rounds = 200
	}
	procs := max(runtime.GOMAXPROCS(0), 2) // other Ps' stacks are what a replacement cannot reach
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	sizes := []int{256 << 10, 1 << 20}
	var mu sync.Mutex
	for round := range rounds {
		size := sizes[round%2] // the classes take turns
		// Every Get of the round before any Put, so that no Get is served
		// by a class's per-P tiers: each class looks unused to the other,
		// which takes its budget.
		var held [][]byte
		ptest.OnEachP(procs, func() {
			for range 16 {
				b := p.Get(size)
				mu.Lock()
				held = append(held, b)
				mu.Unlock()
			}
		})
		var next atomic.Int64
		ptest.OnEachP(procs, func() {
			for i := next.Add(1) - 1; i < int64(len(held)); i = next.Add(1) - 1 {
				p.Put(held[i])
			}
		})
		s := p.Stats()
		slack := gcOffSlack(s, bytepool.DefaultDepth)
		if mapped := m.Mapped(); mapped > budget+slack || mapped-s.Retained > slack {
			t.Fatalf("round %d: %d bytes mapped, %d retained; MaxRetained %d, slack %d", round, mapped, s.Retained, budget, slack)
		}
	}
	var resizes uint64
	for _, c := range p.Stats().Classes {
		resizes += c.Resizes
	}
	if resizes <= 2*bytepool.MaxPending {
		t.Fatalf("%d resizes: the classes did not trade the budget", resizes)
	}
	t.Logf("%d rounds, %d resizes", rounds, resizes)
	p.Trim()
	if mapped, s := m.Mapped(), p.Stats(); mapped != 0 || s.Retained != 0 {
		t.Fatalf("after Trim: %d bytes mapped, %d retained", mapped, s.Retained)
	}
}

// TestMappingPutIntoAHeapPoolIsUnmappedByItsMaker: a buffer an Mmap made,
// Put into a pool on the Go heap, is unmapped when that pool lets it go,
// whether it drops it (no room) or Trim releases it.
func TestMappingPutIntoAHeapPoolIsUnmappedByItsMaker(t *testing.T) {
	m := bytepool.NewMmap(false)
	full := newPool(t, allocator{}, bytepool.Config{MinSize: 4 << 10, MaxRetained: 1})
	b, err := m.Allocate(4 << 10)
	if err != nil {
		t.Fatal(err)
	}
	full.Put(b)
	if mapped := m.Mapped(); mapped != 0 {
		t.Fatalf("dropped by a pool that retains nothing: %d bytes still mapped", mapped)
	}
	ptest.OneP(t)
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 4 << 10})
	for _, size := range []int{4 << 10, 64 << 10} {
		b, err := m.Allocate(size)
		if err != nil {
			t.Fatal(err)
		}
		p.Put(b)
	}
	if mapped := m.Mapped(); mapped == 0 {
		t.Fatal("the heap pool did not keep the mappings")
	}
	p.Trim()
	if mapped := m.Mapped(); mapped != 0 {
		t.Fatalf("after Trim: %d bytes still mapped", mapped)
	}
}
