package shard

import (
	"sync/atomic"

	"github.com/poolkit/poolkit/internal/cacheline"
)

// Stealable is per-P storage that other Ps can take from: one stack of at most
// Depth pointers per P, LIFO for the P that owns it. Any goroutine can Steal
// from any stack and Drain them all, so a value parked on one P is never out
// of reach of another.
//
// Cost: Push is one atomic store (an exchange on amd64) into the P's own slot
// line plus, only when the stack's occupancy bit is clear, one atomic OR on
// the shared bitmap; Pop is one atomic swap. No lock is ever held across a
// preemption: the owner is pinned, stealers only swap slots.
//
// Why ABA cannot hand one value to two takers: every taker (Pop, Steal, Drain)
// empties a slot with an atomic Swap(nil), which returns the pointer that was
// there to exactly one of them; only the stack's owner ever stores a non-nil
// pointer, and only into a slot it has seen empty. There is no linked node
// whose reuse a stale compare-and-swap could mistake for the original.
//
// Stealable is safe for concurrent use. A Push synchronizes before the Pop,
// Steal or Drain that returns its pointer.
//
// A Stealable must not be copied after first use.
type Stealable[T any] struct {
	_     noCopy
	p     procs[stealShard[T]]
	depth int
}

// stealShard is one P's stack. slots are shared with stealers (atomics only);
// top is owned by the goroutine running on the P while pinned (or by the holder
// of g in the synchronised builds): every non-nil slot has an index below top.
type stealShard[T any] struct {
	g     guard
	top   word
	slots []atomic.Pointer[T]
	hits  word // successful Pops
	steal word // successful Steals made from this P
	_     cacheline.Pad
}

// NewStealable returns a Stealable with stacks of the given depth. It panics if
// depth is outside [1, MaxDepth].
func NewStealable[T any](depth int) *Stealable[T] {
	if depth < 1 || depth > MaxDepth {
		panic("shard: depth must be in [1, MaxDepth]")
	}
	s := &Stealable[T]{depth: depth}
	s.p.init(func() *stealShard[T] {
		return &stealShard[T]{slots: make([]atomic.Pointer[T], depth)}
	}, true)
	return s
}

// Depth returns the capacity of one per-P stack.
func (s *Stealable[T]) Depth() int { return s.depth }

// Push puts x, which must not be nil, on the calling P's stack. It returns
// false, keeping nothing, if the stack is full.
func (s *Stealable[T]) Push(x *T) bool {
	t := s.p.cur.Load()
	pid := begin(len(t.shards))
	if uint(pid) >= uint(len(t.shards)) {
		t, pid = s.p.enterSlow(pid)
	}
	sh := t.shards[pid]
	ok := false
	if sh.g.lock() {
		top := sh.top.load()
		if top < len(sh.slots) {
			// Only the owner stores non-nil pointers, and slots at or above
			// top are nil, so a plain atomic store (sequentially consistent:
			// it publishes *x to whoever swaps it out) is enough.
			sh.slots[top].Store(x)
			sh.top.store(top + 1)
			ok = true
		} else {
			ok = sh.pushHole(x)
		}
		sh.g.unlock()
	}
	if ok {
		// Mark the bit in the table published now, not in t: if a grow
		// replaced t meanwhile, stealers look at the new table's bitmap, and
		// the handshake of Steal needs both sides on the same word. (If the
		// load still returns t, any later table was published after our
		// slot store and starts with every bit set.)
		s.p.cur.Load().markBusy(pid)
	}
	end()
	return ok
}

// pushHole stores x in a slot emptied by a stealer below top, if there is one.
func (sh *stealShard[T]) pushHole(x *T) bool {
	for i := range sh.slots {
		if sh.slots[i].Load() == nil {
			sh.slots[i].Store(x)
			return true
		}
	}
	return false
}

// Pop takes the pointer most recently pushed on the calling P's stack that no
// stealer has taken. It returns nil if there is none (in the poolkit_nolinkname
// build it then tries to steal, since a goroutine has no stack of its own).
func (s *Stealable[T]) Pop() *T {
	t := s.p.cur.Load()
	pid := begin(len(t.shards))
	if uint(pid) >= uint(len(t.shards)) {
		t, pid = s.p.enterSlow(pid)
	}
	sh := t.shards[pid]
	var x *T
	if sh.g.lock() {
		top := sh.top.load()
		for top > 0 && top <= len(sh.slots) {
			top--
			// Swap acquires what the pusher published and empties the slot
			// for exactly one taker.
			if x = sh.slots[top].Swap(nil); x != nil {
				break
			}
		}
		sh.top.store(top)
		if x != nil {
			sh.hits.add(1)
		}
		sh.g.unlock()
	}
	end()
	if x == nil && randomIDs {
		return s.Steal()
	}
	return x
}

// Steal takes a pointer from any P's stack, the calling P's included, oldest
// slot first. It returns nil if every stack was found empty. It visits only the
// stacks whose occupancy bit is set, starting after the caller's own.
//
// The bitmap protocol: a stealer that finds a stack empty clears its bit, then
// looks at the stack once more; the owner stores into a slot, then sets the bit
// if it is clear. All four are sequentially consistent, so either the stealer's
// second look sees the new value or the owner sees the cleared bit and sets it
// again: a stack with values never stays unmarked.
func (s *Stealable[T]) Steal() *T {
	// The scan runs unpinned (it may visit every stack): only the count
	// needs the caller's own stack, so it pins again, briefly, on a hit.
	t, pid := s.p.enter()
	end()
	x := steal(t, pid)
	if x != nil {
		t, pid = s.p.enter()
		t.shards[pid].steal.add(1) // the caller's own stack's counter: owner-only, like hits
		end()
	}
	return x
}

// steal implements Steal on table t for the caller on P pid.
func steal[T any](t *table[stealShard[T]], pid int) *T {
	n := len(t.shards)
	for k := 1; k <= n; k++ {
		i := (pid + k) % n // the caller's own stack last
		w, bit := &t.mask[i/64], uint64(1)<<(i%64)
		if w.Load()&bit == 0 {
			continue
		}
		sh := t.shards[i]
		if x := sh.takeOldest(); x != nil {
			return x
		}
		// Found empty: clear the bit, then look once more (see Steal).
		w.And(^bit)
		if x := sh.takeOldest(); x != nil {
			w.Or(bit) // it may hold more
			return x
		}
	}
	return nil
}

// takeOldest swaps out the lowest non-nil slot, or returns nil. Loads first, so
// that empty slots cost no read-modify-write.
func (sh *stealShard[T]) takeOldest() *T {
	for i := range sh.slots {
		if sh.slots[i].Load() == nil {
			continue
		}
		if x := sh.slots[i].Swap(nil); x != nil {
			return x
		}
	}
	return nil
}

// Drain removes every pointer from every allocated stack (those above a shrunken
// GOMAXPROCS included) and passes each to f. It does not pin: f may block. A
// pointer pushed while Drain runs may be missed.
func (s *Stealable[T]) Drain(f func(*T)) {
	for _, sh := range s.p.cur.Load().shards {
		for i := range sh.slots {
			if x := sh.slots[i].Swap(nil); x != nil {
				f(x)
			}
		}
	}
}

// Len returns the number of pointers held, over every allocated stack. It is a
// snapshot taken slot by slot, so concurrent operations make it approximate.
func (s *Stealable[T]) Len() int {
	n := 0
	for _, sh := range s.p.cur.Load().shards {
		for i := range sh.slots {
			if sh.slots[i].Load() != nil {
				n++
			}
		}
	}
	return n
}

// Stats are cumulative counters of a Local or a Stealable, summed over every P.
type Stats struct {
	Hits   uint64 // Pops that found a value on the caller's own stack
	Steals uint64 // Steals that found a pointer
}

// Stats returns the counters. Each P's counters are read without stopping it,
// so the sums may lag by the operations in flight (see word); they never go
// backwards by more than that.
func (s *Stealable[T]) Stats() Stats {
	var st Stats
	for _, sh := range s.p.cur.Load().shards {
		st.Hits += uint64(sh.hits.load())
		st.Steals += uint64(sh.steal.load())
	}
	return st
}
