package pool

import "fmt"

// Slot accounting.
//
// A slot is one unit of MaxSize: an object being connected, idle, leased, or
// being closed (an object keeps its slot until Manager.Close has returned, so
// that a server never sees more than MaxSize of the pool's connections). The
// counters that describe slots — live, connecting, closing, created, closed
// (by reason) and detached — change only here, each transition under
// Pool.smu, so that:
//
//   - reserve compares live with maxSize and raises live in one step, and
//     SetMaxSize changes maxSize under the same lock: no reservation slips
//     past a shrink;
//   - claimSurplus decides "this object is surplus" and counts it as closing
//     in one step: concurrent releases after a shrink close exactly the
//     surplus, never more;
//   - a Stats snapshot, read under the lock, satisfies
//     Created − Closed − Detached == Live − Connecting.
//
// live is also read without the lock (an atomic load) where a stale value is
// harmless: the refusals in reserve and the gauges' cheap readers.
//
// In a key's pool of a keyed pool, reserve also takes one of the budget's
// global slots in the same step (room.take, under smu: the key's limit and
// the global one hold together), and every transition that lowers live
// gives it back (room.freed), so that the budget's count is the keys'
// live counts summed.
//
// Every transition that lowers live is followed by afterFree, which offers
// the room to the oldest waiter or, once the pool is closed, lets Close
// finish.
//
// Every transition that lowers a counter checks, under smu, that none went
// below zero (checkSlotCounts): a negative count is a bug in this file's
// callers, and carrying on would break MaxSize for good.

// reserve takes a slot under maxSize for a connect; the slot counts as
// connecting from now on. It refuses once the pool is closed: it raises live,
// then looks at the closed bit, while Close sets the bit, then looks at live
// (checkDone); both are sequentially consistent, so either reserve sees the
// bit and gives the slot back, or Close sees the slot and waits for it. No
// connect starts after Close has returned.
func (p *Pool[T]) reserve() bool {
	if p.live.Load() >= p.maxSize.Load() || p.state.Load()&closedBit != 0 {
		return false
	}
	p.smu.Lock()
	ok := p.live.Load() < p.maxSize.Load() && p.rm.take(p)
	if ok {
		p.live.Add(1)
		p.connecting.Add(1)
	}
	p.smu.Unlock()
	if ok && p.state.Load()&closedBit != 0 {
		p.unreserve()
		p.checkDone()
		return false
	}
	if !ok {
		// In a keyed pool, refused for another key's need, maybe: the
		// room left free goes to it now.
		p.rm.refused(p)
	}
	return ok
}

// unreserve gives back a reserved slot whose connect never started or
// failed. The caller follows up (afterFree, or checkDone).
func (p *Pool[T]) unreserve() {
	p.smu.Lock()
	p.connecting.Add(-1)
	p.live.Add(-1)
	p.checkSlots()
	p.smu.Unlock()
	p.rm.freed(p, nil)
}

// connected records a successful connect in its slot and returns the new
// object's ID.
func (p *Pool[T]) connected() uint64 {
	p.smu.Lock()
	p.connecting.Add(-1)
	id := p.counters.created.Add(1)
	p.checkSlots()
	p.smu.Unlock()
	return id
}

// connectFailed gives back the slot of a failed connect, and offers it to the
// oldest waiter.
func (p *Pool[T]) connectFailed() {
	p.unreserve()
	p.afterFree()
}

// closeStarted counts one more object on its way to Manager.Close (it keeps
// its slot).
func (p *Pool[T]) closeStarted() {
	p.smu.Lock()
	p.closing.Add(1)
	p.smu.Unlock()
}

// claimSurplus reports whether the pool keeps more objects than MaxSize (after
// a shrink), not counting those already closing, and if so counts one more as
// closing: the caller then closes an object it holds (closeClaimed). The check
// and the count are one step, so concurrent callers close exactly the
// surplus. Once nothing is surplus it clears shrinkingBit.
func (p *Pool[T]) claimSurplus() bool {
	p.smu.Lock()
	over := p.live.Load()-p.closing.Load() > p.maxSize.Load()
	if over {
		p.closing.Add(1)
	}
	p.smu.Unlock()
	if !over {
		p.mu.Lock() // shrinkingBit is set and cleared under mu
		if p.kept() <= p.maxSize.Load() {
			p.state.And(^shrinkingBit)
		}
		p.mu.Unlock()
	}
	return over
}

// closed records that Manager.Close has returned for an object closed for
// reason r, freeing its slot, and offers the room to the oldest waiter: in
// a keyed pool, to pool to if the close was an eviction for it.
func (p *Pool[T]) closed(r int, to *Pool[T]) {
	p.smu.Lock()
	p.counters.closed[r].Add(1)
	p.closing.Add(-1)
	p.live.Add(-1)
	p.checkSlots()
	p.smu.Unlock()
	p.rm.freed(p, to)
	p.afterFree()
}

// detached records an object that left the pool through Lease.Detach, freeing
// its slot, and offers the room to the oldest waiter.
func (p *Pool[T]) detached() {
	p.smu.Lock()
	p.counters.detached.Add(1)
	p.live.Add(-1)
	p.checkSlots()
	p.smu.Unlock()
	p.rm.freed(p, nil)
	p.afterFree()
}

// afterFree follows every transition that lowered live: once the pool is
// closed it may let Close finish; otherwise the room goes to the oldest
// waiter, as a connect on its behalf.
func (p *Pool[T]) afterFree() {
	s := p.state.Load()
	if s&closedBit != 0 {
		p.checkDone()
		return
	}
	if s&waiterMask != 0 {
		p.dispatch()
	}
}

// checkSlots panics if a slot counter went below zero. The caller holds smu
// and has just lowered one.
func (p *Pool[T]) checkSlots() {
	checkSlotCounts(p.live.Load(), p.connecting.Load(), p.closing.Load())
}

// checkSlotCounts panics, naming every count, if any of them is negative.
func checkSlotCounts(live, connecting, closing int64) {
	if live < 0 || connecting < 0 || closing < 0 {
		panic(fmt.Sprintf("pool: internal error: negative slot count: live=%d connecting=%d closing=%d", live, connecting, closing))
	}
}

// kept is the number of live objects not on their way out: live minus those
// queued for, or in, Manager.Close (which keep their slots until it returns,
// but are no surplus to close again). Two loads, so approximate unless the
// caller holds smu.
func (p *Pool[T]) kept() int64 {
	return p.live.Load() - p.closing.Load()
}

// slotCounts is a consistent reading of the slot counters (see Stats).
type slotCounts struct {
	live, connecting, closing  int64
	created, detached, closedN uint64
	closed                     [nReasons]uint64
}

func (p *Pool[T]) readSlots() slotCounts {
	var s slotCounts
	c := &p.counters
	p.smu.Lock()
	s.live, s.connecting, s.closing = p.live.Load(), p.connecting.Load(), p.closing.Load()
	s.created, s.detached = c.created.Load(), c.detached.Load()
	for i := range c.closed {
		s.closed[i] = c.closed[i].Load()
		s.closedN += s.closed[i]
	}
	p.smu.Unlock()
	return s
}
