package pool

import (
	"time"
	"unsafe"
)

// PathStats says where the pool's Acquires found their objects.
type PathStats struct{ LocalHits, ExchangeHits, Steals, HandOffs uint64 }

// PathStats returns where the pool's Acquires found their objects so far.
func (p *Pool[T]) PathStats() PathStats {
	c := &p.counters
	return PathStats{LocalHits: p.localHits(), ExchangeHits: c.xhits.Load(), Steals: c.steals.Load(), HandOffs: c.handoffs.Load()}
}

// WithLocalDepth returns c with its per-P stacks d deep.
func WithLocalDepth(c Config, d int) Config { c.localDepth = d; return c }

// LocalDepth returns the per-P depth in use.
func (p *Pool[T]) LocalDepth() int { return p.local.Load().Depth() }

// ExchangeCap returns the capacity of the current exchange.
func (p *Pool[T]) ExchangeCap() int { return p.xch.Load().x.Cap() }

// Poke asks the maintainer for an early pass (a reap), asynchronously.
func (p *Pool[T]) Poke() { p.poke() }

// Reap runs a reaping pass on the caller's goroutine.
func (p *Pool[T]) Reap() { p.reap() }

// TickFor exposes the clock tick chosen for a Config.
var TickFor = tickFor

// DropHints empties the per-P stacks and the exchange of hints, leaving the
// idle objects idle: only a registry scan can find them then.
func (p *Pool[T]) DropHints() { p.dropHints() }

// FindLeaks runs the maintainer's leak scan on the caller's goroutine.
func (p *Pool[T]) FindLeaks() { p.findLeaks() }

// EntryLayout returns the offset of an entry's Metrics and the entry's size,
// for a pointer-sized T.
func EntryLayout() (metricsOffset, size uintptr) {
	var e entry[*int]
	return unsafe.Offsetof(e.m), unsafe.Sizeof(e)
}

// YieldEvery is how many uses of an object there are, on average, between
// two releases of it that yield the processor.
const YieldEvery = yieldEvery

// YieldDue reports whether the release of a lease of generation gen yields.
var YieldDue = yieldDue

// EntrySpans returns the byte range [start, end) of every registered entry.
func (p *Pool[T]) EntrySpans() [][2]uintptr {
	var out [][2]uintptr
	a := p.reg.arr.Load()
	for i := range a.s {
		if e := a.s[i].Load(); e != nil {
			start := uintptr(unsafe.Pointer(e))
			out = append(out, [2]uintptr{start, start + unsafe.Sizeof(*e)})
		}
	}
	return out
}

// CheckSlotCounts is the slot counters' run-time check (slots.go).
var CheckSlotCounts = checkSlotCounts

// SetTestHookSlotUnclaimed makes f run when a dispatch has found nobody to
// take the slot it reserved, before it gives the slot back; restore undoes
// it. Not safe to call while the pool runs.
func SetTestHookSlotUnclaimed(f func()) (restore func()) {
	testHookSlotUnclaimed = f
	return func() { testHookSlotUnclaimed = nil }
}

// AddStats returns a with b's figures added, as a keyed pool sums its keys'.
func AddStats(a, b Stats) Stats {
	a.add(b)
	return a
}

// PoolLayout returns where the fields the fast paths read end in a Pool,
// and where the first field written on the slow paths begins.
func PoolLayout() (hotEnd, firstWritten uintptr) {
	var p Pool[*int]
	return unsafe.Offsetof(p.maxUses) + unsafe.Sizeof(p.maxUses), unsafe.Offsetof(p.live)
}

// SetKeyedTick makes the keyed pools made from now on tick every d;
// restore undoes it. Not safe to call while keyed pools are made.
func SetKeyedTick(d time.Duration) (restore func()) {
	testKeyedTick = d
	return func() { testKeyedTick = 0 }
}
