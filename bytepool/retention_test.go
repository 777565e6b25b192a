package bytepool_test

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/internal/ptest"
)

func TestSplitKeepsWithinBudget(t *testing.T) {
	for _, cfg := range []bytepool.Config{
		{},
		{MaxRetained: 1 << 20},
		{MaxRetained: 1, MinSize: 1, MaxSize: 1 << 30},
		{Depth: 4096, ExchangeCapacity: 1 << 20, MaxRetained: 1 << 40},
		{Depth: 4096, Spill: 4096, ExchangeCapacity: 1 << 20, MaxRetained: 1 << 40},
		{Spill: -1},
		{Spill: 3, MaxRetained: 1 << 20},
	} {
		for _, procs := range []int{1, 2, 64} {
			var total int64
			for _, pl := range bytepool.Split(cfg, procs) {
				total += int64((pl.Depth+pl.Spill)*procs+pl.ExCap) * int64(pl.Size)
				if pl.ExCap&(pl.ExCap-1) != 0 || pl.Spill&(pl.Spill-1) != 0 {
					t.Fatalf("%+v procs %d: %+v: spill and exchange must be powers of two", cfg, procs, pl)
				}
				if pl.Depth == 0 && pl.Spill != 0 {
					t.Fatalf("%+v procs %d: %+v: a spill without a stack", cfg, procs, pl)
				}
				if cfg.Spill < 0 && pl.Spill != 0 {
					t.Fatalf("%+v procs %d: %+v: Spill < 0 means none", cfg, procs, pl)
				}
			}
			budget := cfg.MaxRetained
			if budget == 0 {
				budget = bytepool.DefaultMaxRetained
			}
			if total > budget {
				t.Fatalf("%+v procs %d: plan retains %d > budget %d", cfg, procs, total, budget)
			}
		}
	}
	// The default budget keeps at least one buffer of every class, and a
	// 100-buffer burst of 64 KiB fits one P's stack and spill.
	for _, pl := range bytepool.Split(bytepool.Config{}, 2) {
		if pl.Depth+pl.ExCap == 0 {
			t.Errorf("default plan keeps nothing of class %d", pl.Size)
		}
		if pl.Size == 64<<10 && pl.Depth+pl.Spill < 100 {
			t.Errorf("default plan for 64 KiB: %+v, holds fewer than 100 on one P", pl)
		}
	}
}

// TestRetentionBoundHoldsThroughMixedOperations runs a million mixed-size
// Gets and Puts (fewer under -race or -short) from several goroutines, each
// holding a few buffers at a time, checks after every batch that the pool
// retains no more than its bound, and that Trim brings it back to zero.
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
		bound := p.Stats().MaxRetained
		if bound > 1<<20 {
			t.Fatalf("MaxRetained %d above budget", bound)
		}
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
						if s := p.Stats(); s.Retained > bound {
							t.Errorf("Retained %d > bound %d", s.Retained, bound)
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
		p.Trim()
		if r := p.Stats().Retained; r != 0 {
			t.Fatalf("Retained after Trim = %d, want 0", r)
		}
		waitReleased(t, p)
	})
}
