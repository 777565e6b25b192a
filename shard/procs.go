package shard

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// table is one generation of per-P state: a stack per P id, and, for Stealable,
// one occupancy bit per stack. A table is never modified after it is published,
// except through the atomics inside it; growing or retiring publishes a new one.
type table[S any] struct {
	shards []*S
	// mask has bit i set when shards[i] may hold a value (Stealable only).
	// A clear bit is a promise only between a stealer's clear and the owner's
	// next push; see Stealable.Steal for the protocol.
	mask []atomic.Uint64
}

func newTable[S any](n int, withMask bool) *table[S] {
	t := &table[S]{shards: make([]*S, n)}
	if withMask {
		t.mask = make([]atomic.Uint64, (n+63)/64)
		// A fresh table may inherit stacks that hold values: start with every
		// bit set; stealers clear the bits of the stacks they find empty.
		for i := range t.mask {
			t.mask[i].Store(^uint64(0))
		}
	}
	return t
}

// procs is the per-P table of one Local or Stealable.
type procs[S any] struct {
	cur      atomic.Pointer[table[S]]
	mu       sync.Mutex // serialises grow and retire; never taken while pinned
	newShard func() *S
	withMask bool
}

func (p *procs[S]) init(newShard func() *S, withMask bool) {
	p.newShard = newShard
	p.withMask = withMask
	t := newTable[S](runtime.GOMAXPROCS(0), withMask)
	for i := range t.shards {
		t.shards[i] = newShard()
	}
	p.cur.Store(t)
}

// grow publishes a table with room for P id pid, keeping every existing stack.
// It runs unpinned.
func (p *procs[S]) grow(pid int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.cur.Load()
	if pid < len(old.shards) {
		return
	}
	t := newTable[S](max(pid+1, runtime.GOMAXPROCS(0)), p.withMask)
	n := copy(t.shards, old.shards)
	for i := n; i < len(t.shards); i++ {
		t.shards[i] = p.newShard()
	}
	p.cur.Store(t)
}

// markBusy sets stack pid's occupancy bit unless it is set already. A plain load
// first keeps the common case (bit already set) free of read-modify-writes and
// of writes to the shared mask line.
func (t *table[S]) markBusy(pid int) {
	w, bit := &t.mask[pid/64], uint64(1)<<(pid%64)
	// Load after the caller's slot store: both are sequentially consistent, so
	// either this load sees a stealer's clear (and we set the bit again) or the
	// stealer's re-check after its clear sees our slot.
	if w.Load()&bit == 0 {
		w.Or(bit)
	}
}

// enter returns the current table and the caller's stack id in it, after
// begin. The caller must call end. Callers inline this sequence by hand on
// their fast paths (the compiler will not inline it with its slow branch):
//
//	t := p.cur.Load()
//	pid := begin(len(t.shards))
//	if uint(pid) >= uint(len(t.shards)) {
//		t, pid = p.enterSlow(pid)
//	}
//
// The table may be one that Retire has just replaced; whatever the caller
// leaves in it reaches the retired table's cleanup (see Local.Retire).
func (p *procs[S]) enter() (*table[S], int) {
	t := p.cur.Load()
	pid := begin(len(t.shards))
	if uint(pid) >= uint(len(t.shards)) {
		t, pid = p.enterSlow(pid)
	}
	return t, pid
}

// enterSlow handles a stack id beyond the table (GOMAXPROCS grew): it ends the
// operation, grows the table unpinned, and begins again.
func (p *procs[S]) enterSlow(pid int) (*table[S], int) {
	for {
		end()
		p.grow(pid)
		t := p.cur.Load()
		if pid = begin(len(t.shards)); uint(pid) < uint(len(t.shards)) {
			return t, pid
		}
	}
}
