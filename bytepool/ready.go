package bytepool

import (
	"sync/atomic"
	"unsafe"

	"github.com/poolkit/poolkit/internal/cacheline"
)

// Ready Buffers.
//
// A Buffer used for one request pays, besides its writes, for a header and
// for storage: a Get and a Put of each, two pinned sections apiece. So Free
// keeps the Buffer, header and storage together, in a slot of the P it runs
// on, when the slot is empty and the storage is at most readyMax bytes; the
// next NewBuffer on that P takes it back whole, in one pinned section, as a
// pooled *bytes.Buffer comes back from a sync.Pool, and Free teaches the
// Buffer's learner in the same section. A slot holds one Buffer; a Free
// that finds it taken gives the storage to the class tiers and the header
// to the pool's cache of headers (Pool.buffers), as before.
//
// What the slots hold counts against the budget: init reserves, out of
// MaxRetained, a slot of readyMax bytes for each of the procs Ps the Pool
// was made for, readyMax being the largest class within a sixteenth of the
// budget shared among them (at most MaxSize); Ps beyond procs have no slot.
// Stats counts the bytes the slots hold.
//
// The slots are released as the per-P tiers are (see resize): at each GC
// tick a table of slots that holds anything is replaced by an empty one,
// and released two ticks later, once no pinned section can be using it
// (its storage goes back to the class tiers, or the exchange, or the
// allocator); Trim replaces it, stops the world (waitPinned) and releases
// it at once. With GOGC=off no tick comes, and the slots keep at most one
// Buffer each, within what init reserved.

// readySlot is one P's slot: the Buffer kept (nil: none) and its storage's
// capacity, which the goroutine running on that P alone writes, pinned,
// and Stats reads without synchronisation (a word is never torn: a racy
// read returns a value the owner wrote, and the sum is approximate, as
// shard.Local.Len's is). It fills a cache line pair.
type readySlot struct {
	b    *Buffer
	size int
	_    [cacheline.Size - 16]byte
}

// readyTable is one generation of slots, one per P id below Pool.procs.
// Every NewBuffer and Free reads slots: the pads keep the objects the
// allocator puts beside the table, which may be written on every operation
// of their own, off its line.
type readyTable struct {
	_     cacheline.Pad
	slots []readySlot
	tick  uint64 // Pool.ticks when it was replaced
	_     cacheline.Pad
}

// newReadyTable returns an empty table of n slots, with an unused slot
// before and after them.
func newReadyTable(n int) *readyTable {
	return &readyTable{slots: make([]readySlot, n+2)[1 : n+1 : n+1]}
}

// readyState is a Pool's ready Buffers, an object of its own that does not
// reach the Pool, so that releaseAll may hold it.
type readyState struct {
	_   cacheline.Pad  // see readyTable
	cur unsafe.Pointer // *readyTable: the current table, read while pinned; atomic
	// old is the tables replaced and not yet released, oldest first;
	// guarded by Pool.trimMu.
	old []*readyTable
	_   cacheline.Pad
}

// table returns the current table. Load it while pinned, and use it only
// inside the pinned section that loaded it (see Pool.rotateReady).
func (r *readyState) table() *readyTable { return (*readyTable)(atomic.LoadPointer(&r.cur)) }

// readyMax returns the most bytes of storage a slot keeps, for a pool of
// cfg on procs Ps: the largest class within MaxRetained / 16 / procs, at
// most MaxSize; 0 if no class fits.
func readyMax(cfg Config, procs int) int {
	limit := min(cfg.MaxRetained/16/int64(procs), int64(cfg.MaxSize))
	best := 0
	for _, size := range classSizes(cfg.MinSize, cfg.MaxSize) {
		if int64(size) <= limit {
			best = size
		}
	}
	return best
}

// holds reports whether t's slots hold anything, as far as a goroutine that
// is not their owners can tell (see readySlot).
func (t *readyTable) holds() bool {
	for i := range t.slots {
		if t.slots[i].b != nil {
			return true
		}
	}
	return false
}

// retained returns the bytes t's slots hold (see readySlot).
func (t *readyTable) retained() int64 {
	var n int64
	for i := range t.slots {
		n += int64(t.slots[i].size)
	}
	return n
}

// rotateReady, at a GC tick, releases the replaced tables no pinned section
// can still be using (two ticks old: a GC cycle's stop-the-world came in
// between), their storage back to the class tiers, and replaces the current
// table if it holds anything. With now set (Trim, after it has stopped the
// world), it releases every replaced table, storage back to the allocator.
// Called with trimMu held.
func (p *Pool) rotateReady(now bool) {
	r := p.ready
	keep := r.old[:0]
	for _, t := range r.old {
		switch {
		case now:
			p.releaseReady(t, true)
		case p.ticks.Load() >= t.tick+2:
			p.releaseReady(t, false)
		default:
			keep = append(keep, t)
		}
	}
	clear(r.old[len(keep):])
	r.old = keep
	if !now {
		p.replaceReady()
	}
}

// replaceReady replaces the current table with an empty one if it holds
// anything, and queues it to be released. Called with trimMu held.
func (p *Pool) replaceReady() {
	r := p.ready
	if t := r.table(); t.holds() {
		atomic.StorePointer(&r.cur, unsafe.Pointer(newReadyTable(len(t.slots))))
		t.tick = p.ticks.Load()
		r.old = append(r.old, t)
	}
}

// releaseReady empties t, a table no goroutine can be using any more: the
// headers are left to the collector, the storage filed back in the pool
// (Put), or, with drop set, given back to the allocator.
func (p *Pool) releaseReady(t *readyTable, drop bool) {
	for i := range t.slots {
		s := &t.slots[i]
		if s.b == nil {
			continue
		}
		if buf := s.b.buf; cap(buf) > 0 {
			if drop {
				p.classes[p.classIndex(cap(buf))].released.Add(1)
				release(p.alloc, buf)
			} else {
				p.Put(buf)
			}
		}
		s.b.buf = nil
		*s = readySlot{}
	}
}

// releaseReadyAll gives back to the allocator what the ready tables of a
// collected Pool hold (see releaseAll).
func releaseReadyAll(r *readyState, a Allocator) {
	ts := r.old
	if t := r.table(); t != nil {
		ts = append(ts, t)
	}
	for _, t := range ts {
		for i := range t.slots {
			if b := t.slots[i].b; b != nil && cap(b.buf) > 0 {
				release(a, b.buf)
			}
		}
	}
}
