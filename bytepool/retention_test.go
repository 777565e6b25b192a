package bytepool_test

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/internal/testutil/ptest"
)

// TestExchangesTakeAtMostAQuarterOfTheBudget: New reserves only the
// exchanges, powers of two within a quarter of MaxRetained, and the default
// budget gives every class up to 1 MiB an exchange.
func TestExchangesTakeAtMostAQuarterOfTheBudget(t *testing.T) {
	for _, cfg := range []bytepool.Config{
		{},
		{MaxRetained: 1 << 20},
		{MaxRetained: 1, MinSize: 8, MaxSize: 1 << 30},
		{ExchangeCapacity: 1 << 20, MaxRetained: 1 << 40},
		{Exchange: bytepool.ExchangeNone},
	} {
		var total int64
		for _, pl := range bytepool.Split(cfg) {
			total += int64(pl.ExCap) * int64(pl.Size)
			if pl.ExCap&(pl.ExCap-1) != 0 {
				t.Fatalf("%+v: %+v: exchange capacity must be a power of two", cfg, pl)
			}
			if cfg.Exchange == bytepool.ExchangeNone && pl.ExCap != 0 {
				t.Fatalf("%+v: %+v: ExchangeNone reserves none", cfg, pl)
			}
		}
		budget := cfg.MaxRetained
		if budget == 0 {
			budget = bytepool.DefaultMaxRetained
		}
		if total > budget/4 {
			t.Fatalf("%+v: exchanges reserve %d > a quarter of the budget %d", cfg, total, budget)
		}
	}
	for _, pl := range bytepool.Split(bytepool.Config{}) {
		if pl.Size <= 1<<20 && pl.ExCap == 0 {
			t.Errorf("default plan gives class %d no exchange", pl.Size)
		}
	}
}

// TestRetentionBoundHoldsThroughMixedOperations runs a million mixed-size
// Gets and Puts (fewer under -race or -short) from several goroutines, each
// holding a few buffers at a time, checks after every batch that the pool
// retains no more than its bound as it stands, which stays within the
// budget, and that Trim brings it back to zero.
func TestRetentionBoundHoldsThroughMixedOperations(t *testing.T) {
	forEachAllocator(t, func(t *testing.T, a allocator) {
		p := newPool(t, a, bytepool.Config{MinSize: 64, MaxSize: 1 << 20, Depth: 4, ExchangeCapacity: 16, MaxRetained: 1 << 20})
		ops := 1_000_000
		if testing.Short() || ptest.Race {
			ops = 100_000
		}
		if a.make != nil {
			ops /= 4 // every miss is a system call
		}
		const workers = 4
		const bound = 1 << 20
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				r := rand.New(rand.NewPCG(uint64(w), 1))
				held := make([][]byte, 0, 16)
				for i := range ops / workers / 2 {
					n := 1 << r.IntN(16) // 1 B … 32 KiB
					n += r.IntN(n)       // and between the classes
					b := p.Get(n)
					if len(b) != n || cap(b) < n {
						t.Errorf("Get(%d): len %d cap %d", n, len(b), cap(b))
						return
					}
					held = append(held, b)
					if len(held) == cap(held) || r.IntN(2) == 0 {
						for _, h := range held {
							p.Put(h)
						}
						held = held[:0]
					}
					if i%4096 == 0 {
						if s := p.Stats(); s.Retained > s.MaxRetained || s.MaxRetained > bound {
							t.Errorf("Retained %d, MaxRetained %d, budget %d", s.Retained, s.MaxRetained, bound)
							return
						}
						runtime.Gosched() // move between Ps now and then
					}
				}
				for _, h := range held {
					p.Put(h)
				}
			})
		}
		wg.Wait()
		s := p.Stats()
		t.Logf("gets %d local %d exchange %d steal %d allocs %d drops %d released %d ticks %d", s.Gets, s.LocalHits, s.ExchangeHits, s.StealHits, s.Allocs, s.Drops, s.Released, p.Ticks())
		if s.Retained > bound {
			t.Fatalf("Retained %d > bound %d", s.Retained, bound)
		}
		if s.Gets != uint64(ops/workers/2*workers) || s.Gets != s.LocalHits+s.ExchangeHits+s.StealHits+s.Allocs {
			t.Fatalf("Gets %d, want %d = LocalHits + ExchangeHits + StealHits + Allocs", s.Gets, ops/2)
		}
		// Trim releases all but the other Ps' stacks, and those too unless
		// the tiers growth retired still await their GC cycle; once the
		// cycles have run, Trim releases everything.
		p.Trim()
		s = p.Stats()
		var stacks int64
		for _, c := range s.Classes {
			stacks += int64(c.Depth*(s.Procs-1)) * int64(c.Size)
		}
		if s.Retained > stacks {
			t.Fatalf("Retained after Trim = %d, above the other Ps' stacks (%d)", s.Retained, stacks)
		}
		if !ptest.CollectUntil(func() bool { p.Trim(); return p.Stats().Retained == 0 }) {
			t.Fatalf("Retained %d after GC cycles and Trim, want 0", p.Stats().Retained)
		}
		waitReleased(t, p)
	})
}
