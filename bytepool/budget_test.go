package bytepool_test

import (
	"runtime"
	"testing"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/internal/testutil/ptest"
)

// burst gets k buffers of n bytes, writes a byte to each, and puts them all
// back; held must have room for k.
func burst(p *bytepool.Pool, held [][]byte, k, n int) {
	for i := range k {
		held[i] = p.Get(n)
		held[i][0] = byte(i)
	}
	for i := range k {
		p.Put(held[i])
		held[i] = nil
	}
}

// TestWarmBurstAllocatesNothing: with the default Config on 2 Ps, bursts of
// 10, 100 and 1000 buffers of 64 KiB (64 MiB, a quarter of the default
// budget) allocate nothing once one burst has grown the class to hold them,
// and the pool retains no more than its budget.
func TestWarmBurstAllocatesNothing(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	for _, k := range []int{10, 100, 1000} {
		p := newPool(t, allocator{}, bytepool.Config{})
		held := make([][]byte, k)
		burst(p, held, k, 64<<10) // grows the class
		if n := testing.AllocsPerRun(10, func() { burst(p, held, k, 64<<10) }); n != 0 {
			s := p.Stats()
			t.Fatalf("burst of %d: %v allocs once warm, want 0 (class %+v)", k, n, classStats(t, s, 64<<10))
		}
		if s := p.Stats(); s.Retained > s.MaxRetained || s.MaxRetained > bytepool.DefaultMaxRetained {
			t.Fatalf("burst of %d: Retained %d MaxRetained %d, budget %d", k, s.Retained, s.MaxRetained, int64(bytepool.DefaultMaxRetained))
		}
	}
}

// TestBudgetMovesToTheClassInUse: a class that grew to most of a small
// budget keeps it while it is used; once it has served no Get for a GC
// cycle, another class that needs room takes it, and then its bursts
// allocate nothing while the first class has none left.
func TestBudgetMovesToTheClassInUse(t *testing.T) {
	ptest.OneP(t)
	const budget = 4 << 20
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 4 << 10, MaxSize: 1 << 20, MaxRetained: budget, ExchangeCapacity: 1})
	held := make([][]byte, 48)
	const a, b = 64 << 10, 48 << 10
	burst(p, held, 40, a)
	burst(p, held, 40, a)
	if c := classStats(t, p.Stats(), a); c.Allocs != 40 || c.Depth == 0 {
		t.Fatalf("class A after two bursts: %+v, want 40 allocations and room", c)
	}
	// B cannot grow while A is in use: A served Gets since the last tick.
	burst(p, held, 48, b)
	if c := classStats(t, p.Stats(), b); c.Spill >= 32 {
		t.Fatalf("class B took room A uses: %+v", c)
	}
	// A GC cycle with A idle; then B takes A's room.
	ticks := p.Ticks()
	if !ptest.CollectUntil(func() bool { return p.Ticks() >= ticks+2 }) {
		t.Fatal("no GC tick")
	}
	burst(p, held, 48, b)
	allocs := classStats(t, p.Stats(), b).Allocs
	burst(p, held, 48, b)
	s := p.Stats()
	cb, ca := classStats(t, s, b), classStats(t, s, a)
	if cb.Allocs != allocs || ca.Depth != 0 {
		t.Fatalf("after A went idle: B %+v (allocs %d before its last burst), A %+v", cb, allocs, ca)
	}
	if s.MaxRetained > budget || s.Retained > s.MaxRetained {
		t.Fatalf("MaxRetained %d Retained %d, budget %d", s.MaxRetained, s.Retained, budget)
	}
}

// TestIdleClassGivesItsRoomBack: the idle rules take a class's per-P tiers
// away with their room, so that the bound as it stands falls back to the
// exchanges alone.
func TestIdleClassGivesItsRoomBack(t *testing.T) {
	defer bytepool.SetCycleIdleFloor(0)()
	p := newPool(t, allocator{}, bytepool.Config{IdleCycles: 1, IdleTimeout: -1})
	exchanges := p.Stats().MaxRetained
	held := make([][]byte, 100)
	burst(p, held, 100, 64<<10)
	// (A GC cycle may already have taken the room back: only the growth
	// is certain here.)
	if c := classStats(t, p.Stats(), 64<<10); c.Resizes == 0 {
		t.Fatalf("class %+v did not grow", c)
	}
	if !ptest.CollectUntil(func() bool { return p.Stats().MaxRetained == exchanges }) {
		s := p.Stats()
		t.Fatalf("MaxRetained %d after GC cycles, want %d: class %+v", s.MaxRetained, exchanges, classStats(t, s, 64<<10))
	}
	if c := classStats(t, p.Stats(), 64<<10); c.Depth != 0 || c.Buffers > c.ExchangeCap {
		t.Fatalf("idle class %+v still has per-P room", c)
	}
}
