package shard

import (
	"runtime"
	"sync/atomic"

	"github.com/poolkit/poolkit/internal/cacheline"
)

// MaxDepth bounds the depth of one per-P stack.
const MaxDepth = 1 << 12

// Local is owner-only per-P storage: one LIFO stack of at most Depth values per
// P. Push and Pop touch only the calling P's stack, while pinned, with no atomic
// read-modify-write (in the default build). A value pushed on one P cannot be
// popped on another: a goroutine that migrates between its Push and Pop misses.
//
// Local is safe for concurrent use. A Push synchronizes before the Pop that
// returns its value (in the default build because both run on the same P,
// which executes one goroutine at a time).
//
// Retire empties every stack at once by publishing fresh ones; values left in
// the old stacks go to the drop function given to NewLocal, if any, from a
// cleanup that runs once no goroutine can still be using them.
//
// A Local must not be copied after first use.
type Local[T any] struct {
	_     noCopy
	p     procs[localShard[T]]
	depth int
	drop  func(T)
	// retiredHits carries the hits of retired tables, so Stats never goes back.
	retiredHits atomic.Uint64
}

// localShard is one P's stack. Only the goroutine running on that P (while
// pinned), or the holder of g in the synchronised builds, touches n and slots.
type localShard[T any] struct {
	g     guard
	n     word // number of values in slots[:n]
	slots []T
	hits  word // successful Pops
	_     cacheline.Pad
}

// NewLocal returns a Local with stacks of the given depth. drop, if not nil, is
// called for each value still held by stacks that Retire discarded; it runs on
// a runtime cleanup goroutine, must not block for long, and is never called
// while the caller of any Local method is pinned. NewLocal panics if depth is
// outside [1, MaxDepth].
func NewLocal[T any](depth int, drop func(T)) *Local[T] {
	if depth < 1 || depth > MaxDepth {
		panic("shard: depth must be in [1, MaxDepth]")
	}
	l := &Local[T]{depth: depth, drop: drop}
	l.p.init(func() *localShard[T] {
		return &localShard[T]{slots: make([]T, depth)}
	}, false)
	return l
}

// Depth returns the capacity of one per-P stack.
func (l *Local[T]) Depth() int { return l.depth }

// Push puts v on the calling P's stack. It returns false, keeping nothing, if
// that stack is full.
func (l *Local[T]) Push(v T) bool {
	t := l.p.cur.Load()
	pid := begin(len(t.shards))
	if uint(pid) >= uint(len(t.shards)) {
		t, pid = l.p.enterSlow(pid)
	}
	s := t.shards[pid]
	ok := false
	if s.g.lock() {
		if n := s.n.load(); n < len(s.slots) {
			s.slots[n] = v
			s.n.store(n + 1)
			ok = true
		}
		s.g.unlock()
	}
	end()
	runtime.KeepAlive(t) // the table stays reachable until the stack is left: see Retire
	return ok
}

// Pop takes the value most recently pushed on the calling P's stack. It returns
// false if that stack is empty. Pop zeroes the slot it empties.
func (l *Local[T]) Pop() (T, bool) {
	t := l.p.cur.Load()
	pid := begin(len(t.shards))
	if uint(pid) >= uint(len(t.shards)) {
		t, pid = l.p.enterSlow(pid)
	}
	s := t.shards[pid]
	v, ok := s.pop()
	end()
	if !ok && randomIDs {
		// Without P ids a goroutine has no stack of its own: look at the others.
		for i := 1; i < len(t.shards) && !ok; i++ {
			v, ok = t.shards[(pid+i)%len(t.shards)].pop()
		}
	}
	runtime.KeepAlive(t)
	return v, ok
}

func (s *localShard[T]) pop() (v T, ok bool) {
	if s.g.lock() {
		if n := s.n.load(); n > 0 && n <= len(s.slots) {
			n--
			v, ok = s.slots[n], true
			var zero T
			s.slots[n] = zero
			s.n.store(n)
			s.hits.add(1)
		}
		s.g.unlock()
	}
	return v, ok
}

// Len returns the number of values held, summed over every allocated stack. It
// is approximate: each stack's count is read without stopping its owner (see
// word), so the sum may be off by the operations in flight. It never blocks.
func (l *Local[T]) Len() int {
	n := 0
	for _, s := range l.p.cur.Load().shards {
		n += s.n.load()
	}
	return n
}

// Stats returns the counters of the current stacks (Steals is always 0: a Local
// cannot be stolen from). Each P's counters are read without stopping it, so
// the sums may lag by the operations in flight (see word); hits a straggler
// counts on a table after Retire has summed it are lost.
func (l *Local[T]) Stats() Stats {
	st := Stats{Hits: l.retiredHits.Load()}
	for _, s := range l.p.cur.Load().shards {
		st.Hits += uint64(s.hits.load())
	}
	return st
}

// Retire empties every stack at once: it publishes a table of fresh, empty
// stacks, so each owner's next operation starts from nothing. Values in the old
// stacks are handed to the drop function (if any) from a runtime cleanup that
// runs after the old table becomes unreachable.
//
// Why that cleanup cannot race an owner: every operation loads the table once,
// uses only that table, and keeps it reachable until the operation has ended
// (runtime.KeepAlive after end). A cleanup runs only once its table is
// unreachable, so only after every operation that loaded the old table has
// ended; a value such a straggler pushed after Retire is found by the cleanup.
// In the synchronised builds the cleanup takes each stack's guard as well.
func (l *Local[T]) Retire() {
	old := l.p.replace()
	var hits uint64
	for _, s := range old.shards {
		hits += uint64(s.hits.load())
	}
	l.retiredHits.Add(hits)
	if l.drop == nil {
		return
	}
	runtime.AddCleanup(old, drainRetired[T], retired[T]{old.shards, l.drop})
}

type retired[T any] struct {
	shards []*localShard[T]
	drop   func(T)
}

func drainRetired[T any](r retired[T]) {
	for _, s := range r.shards {
		for {
			if !s.g.lock() {
				// Only the synchronised builds can get here, and only while a
				// straggler that loaded the old table still holds the guard.
				runtime.Gosched()
				continue
			}
			n := s.n.load()
			for i := range n {
				v := s.slots[i]
				var zero T
				s.slots[i] = zero
				r.drop(v)
			}
			s.n.store(0)
			s.g.unlock()
			break
		}
	}
}

// noCopy may be embedded in structs that must not be copied after first use;
// go vet's copylocks check reports copies.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
