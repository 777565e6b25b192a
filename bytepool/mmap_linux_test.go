//go:build linux

package bytepool_test

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/internal/testutil/ptest"
)

func platformAllocators() []allocator {
	return []allocator{{name: "Mmap", make: func() bytepool.Allocator { return bytepool.NewMmap(false) }}}
}

// TestMappedBytesStayWithinBudgetWithGCOff: with the GC off, so that no
// runtime cleanup runs, 800 rounds of a burst on every P, each followed by
// Trim, keep the bytes the pool's Mmap has mapped beyond what the pool
// retains, whenever no buffer is out, within the slack Pool.Trim documents:
// per class, one set of other Ps' stacks that Trim retired and one for each
// resize (Depth × P buffers each); and the total within MaxRetained plus
// that slack. (Before Trim released what it can reach at once, and retired
// at most one set per class until a GC cycle, 800 rounds left gigabytes
// mapped.)
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
		for _, when := range []string{"after the Puts", "after Trim"} {
			s := p.Stats()
			var slack int64
			for _, c := range s.Classes {
				slack += int64((1+c.Resizes)*uint64(bytepool.DefaultDepth*s.Procs)) * int64(c.Size)
			}
			if mapped := m.Mapped(); mapped > budget+slack || mapped-s.Retained > slack {
				t.Fatalf("round %d, %s: %d bytes mapped, %d retained; MaxRetained %d, slack %d", round, when, mapped, s.Retained, budget, slack)
			}
			p.Trim()
		}
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
