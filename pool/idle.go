package pool

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// The idle set.
//
// Ownership of an object is decided by its entry's state alone: even is idle,
// odd is held, and whoever moves it from even to odd by compare-and-swap
// (claim) holds it. Every live entry is in the registry, so the idle set is
// exactly the registered entries whose state is even; the per-P stacks and
// the exchange hold hints — pointers to entries that were idle when pushed —
// which make finding one cheap but decide nothing. A hint whose entry is held
// when it is popped is stale and dropped; an idle entry with no hint is found
// by a scan of the registry (the steal level).
//
// This is what keeps a hand-out and a release at one atomic read-modify-write
// each (the claim; the compare-and-swap that ends the lease and publishes):
// the per-P stacks are owner-only (shard.Local: plain loads and stores while
// pinned) because they arbitrate nothing. See decision 0006.
//
// The lost-wake-up protocol rests on the states and the registry only: a
// releaser publishes with a compare-and-swap on the state, then loads the
// waiter count; a waiter raises the count, then scans the registry (take).
// All of these are sequentially consistent, so either the releaser sees the
// waiter or the waiter's scan sees the idle state.

// claim takes e if it is idle, and returns the state it now holds e at (a
// lease's generation).
func claim[T any](e *entry[T]) (gen uint64, ok bool) {
	s := e.state.Load()
	return s + 1, s&1 == 0 && e.state.CompareAndSwap(s, s+1)
}

// publish makes e, which the caller holds, idle, and leaves a hint for it.
func (p *Pool[T]) publish(e *entry[T]) {
	e.state.Add(1)
	p.hint(e)
}

// hint pushes a hint for e on this P's stack, else in the exchange; when
// both are full, e has no hint and is found by a registry scan.
func (p *Pool[T]) hint(e *entry[T]) {
	if !p.local.Load().Push(e) {
		p.xch.Load().x.Park(e)
	}
}

// Sources of a claimed object, for the counters.
const (
	srcLocal = iota + 1
	srcExchange
	srcSteal
)

// take claims an idle object, unchecked: a hint on this P's stack, a hint in
// the exchange, else a scan of the registry.
//
// With MaxIdleTime set, reuse concentrates on the most recently released
// objects, so that those a smaller load no longer needs stay idle and age
// out (database/sql: "reuse the lowest idle time connection so we can close
// connections which remain idle as soon as possible"): a hint is taken only
// if its object was released in the current clock tick, the others are
// dropped (their objects stay idle, without a hint), and the scan claims the
// idle object released last (claimYoungest). Without MaxIdleTime nothing
// ages out, and the scan claims the first idle object it meets from a random
// start, spreading concurrent scans. aging is false for the takes that serve
// waiters (dispatch): every object is in demand then.
func (p *Pool[T]) take(aging bool) (*entry[T], int) {
	now := p.clock.Load().ns
	for {
		e, ok := p.local.Load().Pop()
		if !ok {
			break
		}
		if _, ok := claim(e); ok {
			if !aging || e.lastUsed.Load() == now {
				return e, srcLocal
			}
			p.counters.localMiss.Add(1) // a local pop that is no acquire
			p.unclaim(e)
			continue
		}
		p.counters.stale.Add(1)
	}
	x := p.xch.Load().x
	for {
		e, ok := x.Unpark()
		if !ok {
			break
		}
		if _, ok := claim(e); ok {
			if !aging || e.lastUsed.Load() == now {
				p.counters.xhits.Add(1)
				return e, srcExchange
			}
			p.unclaim(e)
		}
	}
	var e *entry[T]
	if aging {
		e = p.reg.claimYoungest(now)
	} else {
		e = p.reg.claimAny()
	}
	if e != nil {
		p.counters.steals.Add(1)
		p.rm.scanned(p)
		return e, srcSteal
	}
	return nil, 0
}

// unclaim makes e, which the caller claimed and did not use, idle again
// without a hint (it has aged: see take), and then looks for waiters and a
// Close, as every publisher does (see afterPublish).
func (p *Pool[T]) unclaim(e *entry[T]) {
	e.state.Add(1)
	if p.state.Load()&^(acqHookBit|relHookBit) != 0 {
		p.afterPublish()
	}
}

// claimIdle claims every idle object and passes it to f.
func (p *Pool[T]) claimIdle(f func(*entry[T])) {
	p.reg.each(func(e *entry[T]) {
		if _, ok := claim(e); ok {
			f(e)
		}
	})
}

// drainIdle closes every idle object (Close, or a put that raced with it).
func (p *Pool[T]) drainIdle(r int) {
	p.claimIdle(func(e *entry[T]) { p.discard(e, r) })
}

// dropHints empties the per-P stacks and the exchange of hints (after Close:
// the entries they point at are gone).
func (p *Pool[T]) dropHints() {
	p.local.Load().Retire()
	x := p.xch.Load().x
	for {
		if _, ok := x.Unpark(); !ok {
			return
		}
	}
}

// idleLen is the number of idle objects (a snapshot, state by state).
func (p *Pool[T]) idleLen() int {
	n := 0
	p.reg.each(func(e *entry[T]) {
		if e.state.Load()&1 == 0 {
			n++
		}
	})
	return n
}

// registry is the set of live entries: an array of atomic pointers that
// scans read without a lock, and a free list of its indices. The array only
// grows (copied, then published); a scan that loaded an older array may see
// entries removed since (their state is odd for ever: skipped) but not miss
// one registered before it loaded the array.
type registry[T any] struct {
	arr  atomic.Pointer[regArray[T]]
	mu   sync.Mutex // guards free, used, growth and the entries' idx
	free []int
	used int // arr.s[:used] have been handed out
}

type regArray[T any] struct{ s []atomic.Pointer[entry[T]] }

func (r *registry[T]) init(n int) {
	r.arr.Store(&regArray[T]{s: make([]atomic.Pointer[entry[T]], max(n, 1))})
}

func (r *registry[T]) add(e *entry[T]) {
	r.mu.Lock()
	a := r.arr.Load()
	var i int
	if k := len(r.free); k > 0 {
		i = r.free[k-1]
		r.free = r.free[:k-1]
	} else {
		if r.used == len(a.s) {
			b := &regArray[T]{s: make([]atomic.Pointer[entry[T]], 2*len(a.s))}
			for j := range a.s {
				b.s[j].Store(a.s[j].Load())
			}
			r.arr.Store(b)
			a = b
		}
		i = r.used
		r.used++
	}
	e.idx = int32(i)
	a.s[i].Store(e)
	r.mu.Unlock()
}

func (r *registry[T]) remove(e *entry[T]) {
	r.mu.Lock()
	r.arr.Load().s[e.idx].Store(nil)
	r.free = append(r.free, int(e.idx))
	r.mu.Unlock()
}

// each calls f for every registered entry (and possibly for entries removed
// meanwhile). It holds no lock: f may block.
func (r *registry[T]) each(f func(*entry[T])) {
	a := r.arr.Load()
	for i := range a.s {
		if e := a.s[i].Load(); e != nil {
			f(e)
		}
	}
}

// claimYoungest claims the idle entry released last (the greatest
// lastUsed), stopping at the first one released in the current tick (now):
// none is younger. If another claimer takes it first it looks again, twice,
// then takes any idle entry. It returns nil if none is idle.
func (r *registry[T]) claimYoungest(now int64) *entry[T] {
	for range 3 {
		a := r.arr.Load()
		var best *entry[T]
		var bestT int64
		for i := range a.s {
			e := a.s[i].Load()
			if e == nil || e.state.Load()&1 != 0 {
				continue
			}
			if t := e.lastUsed.Load(); best == nil || t > bestT {
				best, bestT = e, t
				if t >= now {
					break
				}
			}
		}
		if best == nil {
			return nil
		}
		if _, ok := claim(best); ok {
			return best
		}
	}
	return r.claimAny()
}

// claimAny claims an idle entry, scanning from a random index so that
// concurrent scans spread over the array, or returns nil.
func (r *registry[T]) claimAny() *entry[T] {
	a := r.arr.Load()
	n := len(a.s)
	i := rand.IntN(n)
	for range n {
		if e := a.s[i].Load(); e != nil {
			if _, ok := claim(e); ok {
				return e
			}
		}
		if i++; i == n {
			i = 0
		}
	}
	return nil
}
