package pool

import (
	"runtime"

	"github.com/poolkit/poolkit/internal/shard"
)

// Release returns the object to the pool. The lease, and every copy of it,
// must not be used afterwards: a later use panics, and of two concurrent
// Releases of one lease exactly one returns the object and the other panics.
// The object is closed instead if it fails the expiry checks or (then) the
// manager's [manager.ReleaseChecker], or if the pool is closed or over its
// MaxSize (after [Pool.SetMaxSize] shrank it). About one release in 1024 of
// each object yields the processor ([runtime.Gosched]) once the object is
// back in the pool, so that goroutines that acquire and release in a loop
// take turns with those waiting for a processor.
func (l Lease[T]) Release() {
	// The fast path (no hook, no waiter, not closed or shrinking, the entry
	// already stamped with this clock tick) ends the lease and publishes the
	// object with a single compare-and-swap, and writes nothing to the
	// entry before it: the loser of two concurrent Releases (a data race of
	// the caller's) has then only read the entry. Every other path (put)
	// ends the lease first and then works on an object it holds; the one
	// extra read-modify-write that costs falls on the clock-tick case once
	// per tick per object, on every release of a pool with a hook
	// (Observer, LeakThreshold, MaxIdle, a ReleaseChecker), and when waiters
	// exist. Both end the lease with one compare-and-swap, which decides
	// between concurrent Releases. The yield comes after the object is back
	// (yieldDue; decision 0008).
	e := l.live()
	p := e.p
	due := yieldDue(l.gen)
	if p.state.Load() != 0 || e.lastUsed.Load() != p.clock.Load().ns || p.expired(e) != 0 {
		p.put(e, l.gen)
		if due {
			runtime.Gosched()
		}
		return
	}
	// Idle from here: any claimer may take it.
	if !e.state.CompareAndSwap(l.gen, l.gen+1) {
		panic(staleMsg)
	}
	// A hint: Local.Push's steps, inlined; else the whole way (hint).
	st := p.local.Load().Stack(shard.Enter())
	ok := st.Push(e)
	shard.Exit()
	if !ok {
		p.hint(e)
	}
	// The lost-wake-up protocol, releaser's side: publish (the
	// compare-and-swap above), then look for waiters (see block).
	if p.state.Load() != 0 {
		p.afterPublish()
	}
	if due {
		runtime.Gosched()
	}
}

// yieldEvery is how many uses of an object there are, on average, between
// two releases of it that yield the processor (a power of two): see Release
// and decision 0008.
const yieldEvery = 1 << 10

// yieldDue reports whether the release of the lease of generation gen
// yields the processor: when gen times 2⁶⁴/φ (Fibonacci hashing) falls in
// the lowest 1/yieldEvery of the 64-bit range. The generation is the
// object's state word when the lease took it; every use moves it on by two
// (a claim and a fast release, or a hand-off) or four (a release that
// publishes on the slow path), and the pool's own visits (reaping, health
// checks) by two. Along any such progression the products are spread evenly
// over the range, so about one release in yieldEvery yields, never two in a
// row, and, while the step stays the same, never more than about
// 3·yieldEvery uses apart. The generation is the lease's own copy: the
// releaser reads nothing of the entry for it, so that the loser of two
// concurrent Releases (a race of the caller's) reads nothing a new holder
// writes.
func yieldDue(gen uint64) bool { return gen*0x9E3779B97F4A7C15 < 1<<64/yieldEvery }

// releaseRefused runs the manager's ReleaseChecker on e, which the caller
// holds, and reports whether it refused the object. A panicking CheckRelease
// closes the object and frees its slot before the panic goes on.
func (p *Pool[T]) releaseRefused(e *entry[T]) bool {
	armed := true
	defer e.closeIfPanicked(&armed, reasonReleaseCheck)
	err := p.relCheck.CheckRelease(e.value)
	armed = false
	return err != nil
}

// put is Release's slow path: it ends the lease gen on e, keeping the object,
// and returns it (putHeld).
func (p *Pool[T]) put(e *entry[T], gen uint64) {
	p.endLease(e, gen)
	p.putHeld(e)
}

// endLease ends lease gen on e, keeping e held by the caller.
func (p *Pool[T]) endLease(e *entry[T], gen uint64) {
	if !e.state.CompareAndSwap(gen, gen+2) {
		panic(staleMsg)
	}
}

// putHeld is put after the lease has ended, on an object the caller holds:
// the expiry checks, the manager's release check (so never asked about an
// object that expired), the time stamp, then giveBack.
func (p *Pool[T]) putHeld(e *entry[T]) {
	if p.cfg.LeakThreshold > 0 {
		e.leak.Store(nil) // the lease is over; its record held the acquirer's context
	}
	if r := p.expired(e); r != 0 {
		p.discard(e, r)
		return
	}
	if p.relCheck != nil && p.releaseRefused(e) {
		p.discard(e, reasonReleaseCheck)
		return
	}
	if tk := p.clock.Load(); e.lastUsed.Load() != tk.ns {
		e.lastUsed.Store(tk.ns)
		e.m.LastUsed = tk.at
	}
	p.giveBack(e)
}

// giveBack returns an object the caller holds and that passed its checks (a
// released, fresh, rescued or reaped one): closed if the pool is closed or
// the object is surplus after a shrink, else (in a keyed pool's member)
// closed if another key needs its room more (room.yield), else to the
// oldest waiter, else to the idle set.
func (p *Pool[T]) giveBack(e *entry[T]) {
	s := p.state.Load()
	if s&closedBit != 0 {
		p.discard(e, reasonClosed)
		return
	}
	if s&shrinkingBit != 0 && p.claimSurplus() {
		p.closeClaimed(e, reasonShrink, nil)
		return
	}
	if to, r := p.rm.yield(p); to != nil {
		p.evict(e, r, to)
		return
	}
	if s&waiterMask != 0 && p.handoff(hand[T]{e: e}) {
		return
	}
	if p.cfg.MaxIdle > 0 && p.idleAtLeast(p.cfg.MaxIdle) {
		p.discard(e, reasonMaxIdle)
		return
	}
	p.publish(e)
	if p.state.Load() != 0 {
		p.afterPublish()
	}
}

// afterPublish runs after an object was published while state was non-zero:
// hand idle objects to waiters; close what a concurrent Close missed; after
// a shrink that raced with the publish (the maintainer's pass may have
// looked before the object was idle), ask the maintainer for another pass.
func (p *Pool[T]) afterPublish() {
	s := p.state.Load()
	if s&closedBit != 0 {
		p.drainIdle(reasonClosed)
		return
	}
	if s&waiterMask != 0 {
		p.dispatch()
	}
	if s&shrinkingBit != 0 && p.kept() > p.maxSize.Load() {
		p.poke()
	}
}
