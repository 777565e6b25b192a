package pool

import "sync"

// budget is a keyed pool's global slot budget, shared by its members (one
// Pool per key; see Keyed). A member's slot counts once in its own live
// count, under its MaxSize (MaxSizePerKey), and once in used, under max
// (KeyedConfig.MaxSize): reserve takes both in one step (take, called under
// the member's smu), and every transition that lowers a member's live gives
// the global slot back (free, from Pool.freed; granted's undo of a slot in
// transit hands it back to free's loop instead). So used is the members'
// live counts summed, and neither limit is passed.
//
// Room is handed on, not raced for. Every waiter of every member that takes
// slots joins the budget's queue too, in arrival order (want, under the
// member's mu as it enqueues; unwant as it leaves the member's queue, for
// whatever reason). A waiter is eligible while its key is under its own
// limit: it needs global room, not one of its key's objects. A freed slot
// goes to the member of the oldest eligible waiter (free, then
// Pool.granted: the member hands it to its own oldest slot-taker, FIFO
// within the key), and a reserve takes a free slot only if no eligible
// waiter of another key is ahead (take): no key barges past another's
// waiter.
//
// Room is made, not waited for. A member whose look for a waiter fails at
// the global cap asks makeRoom to close the least recently used idle object
// of a key that nobody waits for (reason CloseEvict); its slot, once
// Manager.Close returns, is a freed slot like any other. While any waiter
// is queued, every member carries roomBit, which sends its releases off the
// fast path: an object released where nobody waits is closed if a waiter
// needs its room (giveBack, afterPublish). evicting counts the evictions
// under way, so that exactly the room the eligible waiters can use is made
// (need).
//
// Lock order: a member's mu, then its smu, then budget.mu; budget.mu is
// never held while taking a member's lock, calling a manager or sending.
type budget[T any] struct {
	mu         sync.Mutex
	max        int64
	used       int64      // global slots held: the members' live counts summed
	head, tail *waiter[T] // the waiters for room, oldest first
	wants      int        // waiters in the queue
	seq        uint64     // the last arrival's number (waiter.seq)
	evicting   int64      // evictions started whose slots have not come free
	// members calls f on every member until f returns false; onEmpty
	// is told of a member left with no object and no waiter (Keyed).
	members func(f func(*Pool[T]) bool)
	onEmpty func(*Pool[T])
}

// want queues w, which its member has just queued, for global room, in
// its Acquire's arrival order: a new waiter at the back, one that returns
// (its handed or fresh object failed its check, or its connect) where its
// first arrival puts it. Called with the member's mu held.
func (b *budget[T]) want(w *waiter[T]) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w.wanting {
		return
	}
	w.wanting = true
	w.passed = 0
	if w.seq == 0 {
		b.seq++
		w.seq = b.seq
	}
	after := b.tail // the waiter w goes behind: the youngest older than w
	for after != nil && after.seq > w.seq {
		after = after.rprev
	}
	w.rprev = after
	if after != nil {
		w.rnext, after.rnext = after.rnext, w
	} else {
		w.rnext, b.head = b.head, w
	}
	if w.rnext != nil {
		w.rnext.rprev = w
	} else {
		b.tail = w
	}
	if b.wants++; b.wants == 1 {
		b.setRoom(true)
	}
}

// unwant takes w out of the queue for room, if it is there. Called with its
// member's mu held, as w leaves the member's queue.
func (b *budget[T]) unwant(w *waiter[T]) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !w.wanting {
		return
	}
	if w.rprev != nil {
		w.rprev.rnext = w.rnext
	} else {
		b.head = w.rnext
	}
	if w.rnext != nil {
		w.rnext.rprev = w.rprev
	} else {
		b.tail = w.rprev
	}
	w.rprev, w.rnext, w.wanting = nil, nil, false
	if b.wants--; b.wants == 0 {
		b.setRoom(false)
	}
}

// setRoom sets or clears roomBit on every member. Called with mu held; a
// member made meanwhile takes the bit as it joins (Keyed.add).
func (b *budget[T]) setRoom(on bool) {
	b.members(func(p *Pool[T]) bool {
		if on {
			p.state.Or(roomBit)
		} else {
			p.state.And(^roomBit)
		}
		return true
	})
}

// eligible reports whether w needs global room: it takes slots, and its key
// is open and under its own limit. Called with mu held.
func eligible[T any](w *waiter[T]) bool {
	p := w.owner
	return !w.objOnly.Load() && p.live.Load() < p.maxSize.Load() && p.state.Load()&closedBit == 0
}

// firstEligible returns the oldest eligible waiter, or nil. Called with mu
// held.
func (b *budget[T]) firstEligible() *waiter[T] {
	for w := b.head; w != nil; w = w.rnext {
		if eligible(w) {
			return w
		}
	}
	return nil
}

// take takes a global slot for member p's reserve: there is one free, and
// no eligible waiter of another key is ahead. Called with p's smu held.
func (b *budget[T]) take(p *Pool[T]) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used >= b.max {
		return false
	}
	if w := b.firstEligible(); w != nil && w.owner != p {
		return false
	}
	b.used++
	return true
}

// free gives back a global slot a member has freed (evicted: the slot of an
// eviction). It goes to the member of the oldest eligible waiter, if there
// is one, else back to the budget.
func (b *budget[T]) free(evicted bool) {
	for {
		b.mu.Lock()
		if evicted {
			b.evicting--
			evicted = false
		}
		w := b.firstEligible()
		if w == nil {
			b.used--
			checkSlotCounts(b.used, 0, b.evicting)
			b.mu.Unlock()
			return
		}
		p := w.owner
		b.mu.Unlock()
		// The slot stays counted in used while it is on its way: no
		// reserve takes it meanwhile. A member that cannot use it (its
		// waiter left, or its key filled up) leaves its waiters
		// ineligible, and the loop gives the slot on.
		if p.granted() {
			b.pump()
			return
		}
	}
}

// pump hands free global room to the oldest eligible waiters while there
// is both. A reserve that take refused, because an eligible waiter of
// another key was ahead, leaves the room to that waiter, whose own look may
// have come and gone (it became eligible as its key's object closed, before
// that close freed its global slot); without pump the room would wait for
// the next free. Each turn either hands a slot on or, if the member cannot
// use it, leaves that member's waiters ineligible.
func (b *budget[T]) pump() {
	for {
		b.mu.Lock()
		if b.used >= b.max {
			b.mu.Unlock()
			return
		}
		w := b.firstEligible()
		if w == nil {
			b.mu.Unlock()
			return
		}
		b.used++
		p := w.owner
		b.mu.Unlock()
		if !p.granted() {
			b.mu.Lock()
			b.used--
			b.mu.Unlock()
		}
	}
}

// evictOne closes the least recently used idle object of a key nobody
// waits for, if the budget is full and no eviction is under way: a
// TryAcquire or a Warm at the cap, which wait for no room of their own,
// so make it for their retry.
func (b *budget[T]) evictOne() {
	b.mu.Lock()
	ok := b.used >= b.max && b.evicting == 0
	if ok {
		b.evicting++
	}
	b.mu.Unlock()
	if ok && !b.evictLRU() {
		b.evictionOff()
	}
}

// need is how many more global slots the eligible waiters could use now:
// the eligible waiters, at most as many per key as the key has room for,
// less the slots free and the evictions under way. Called with mu held.
func (b *budget[T]) need() int64 {
	var n int64
	for w := b.head; w != nil; w = w.rnext {
		if p := w.owner; eligible(w) && p.roomSeen < p.maxSize.Load()-p.live.Load() {
			p.roomSeen++
			n++
		}
	}
	for w := b.head; w != nil; w = w.rnext {
		w.owner.roomSeen = 0
	}
	return n - (b.max - b.used) - b.evicting
}

// claimEviction reports whether an eligible waiter needs room that no
// eviction under way makes; if so it counts one more eviction, which the
// caller starts (closing an idle object with reasonEvict) or calls off
// (evictionOff).
func (b *budget[T]) claimEviction() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.need() <= 0 {
		return false
	}
	b.evicting++
	return true
}

// yieldTo reports whether an object member p holds, about to go to p's
// oldest waiter or to its idle set, is to be closed for the room of another
// key's waiter instead: one that is eligible, queued before p's every
// waiter, has no room coming yet, and — if p has waiters of its own — has
// been passed over passLimit times already (each pass counted here). If so
// it counts the eviction, which the caller starts. So a key that nobody
// waits for gives its object up at once, and a hot key's objects, handed
// on among its own waiters, cannot starve a key that waits for room.
func (b *budget[T]) yieldTo(p *Pool[T]) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for w := b.head; w != nil; w = w.rnext {
		if w.owner == p {
			return false
		}
		if eligible(w) {
			if p.state.Load()&waiterMask != 0 && w.passed < passLimit {
				w.passed++
				return false
			}
			if b.need() <= 0 {
				return false
			}
			b.evicting++
			return true
		}
	}
	return false
}

// passLimit is how many releases may pass over a waiter for room, each
// handing its object to a younger waiter of its own key, before a release
// yields to it (yieldTo). With none, every release at the cap with an
// older waiter of another key queued closes its object and connects
// another (with more keys busy than the budget holds, nearly every one);
// with no bound, a key whose waiters never run out keeps its objects while
// older waiters of other keys wait. Two kept the worst key's p99 within
// the spread of strict arrival order at 30% fewer evictions (decision
// 0014).
const passLimit = 2

// evictionOff calls off an eviction claimEviction counted.
func (b *budget[T]) evictionOff() {
	b.mu.Lock()
	b.evicting--
	b.mu.Unlock()
}

// makeRoom closes, while eligible waiters need room, the least recently
// used idle object of a key that nobody waits for; it stops when nothing is
// idle: the waiters then wait for a release.
func (b *budget[T]) makeRoom() {
	for b.claimEviction() {
		if !b.evictLRU() {
			b.evictionOff()
			return
		}
	}
}

// evictLRU closes the least recently used idle object of a member nobody
// waits for (the members' clocks share their origin: see Keyed.add), and
// reports whether it found one.
func (b *budget[T]) evictLRU() bool {
	for range 3 {
		var best *entry[T]
		var bestT int64
		b.members(func(p *Pool[T]) bool {
			if p.state.Load()&(waiterMask|closedBit) != 0 {
				return true
			}
			p.reg.each(func(e *entry[T]) {
				if e.state.Load()&1 != 0 {
					return
				}
				if t := e.lastUsed.Load(); best == nil || t < bestT {
					best, bestT = e, t
				}
			})
			return true
		})
		if best == nil {
			return false
		}
		if _, ok := claim(best); ok {
			best.p.discard(best, reasonEvict)
			return true
		}
	}
	return false
}

// empty tells the keyed pool that member p has no object and no waiter.
func (b *budget[T]) empty(p *Pool[T]) { b.onEmpty(p) }

// granted takes a global slot the budget hands p (it counts in used
// already) and gives it to p's oldest slot-taking waiter, who connects with
// it. It reports false, keeping nothing, if p cannot use it: its key is at
// its limit, it is closed, or nobody takes a slot any more.
func (p *Pool[T]) granted() bool {
	p.smu.Lock()
	ok := p.live.Load() < p.maxSize.Load()
	if ok {
		p.live.Add(1)
		p.connecting.Add(1)
	}
	p.smu.Unlock()
	if !ok {
		return false
	}
	// As in reserve: raise live, then look at the closed bit.
	if p.state.Load()&closedBit == 0 && p.handoff(hand[T]{slot: true}) {
		return true
	}
	p.smu.Lock()
	p.connecting.Add(-1)
	p.live.Add(-1)
	p.checkSlots()
	p.smu.Unlock()
	if p.state.Load()&closedBit != 0 {
		p.checkDone()
	} else if p.live.Load() == 0 && p.state.Load()&waiterMask == 0 {
		p.kb.empty(p)
	}
	return false
}

// evictForRoom closes this member's idle objects while a waiter of another
// key needs their room (afterPublish, with nobody waiting here).
func (p *Pool[T]) evictForRoom() {
	for p.kb.claimEviction() {
		e := p.reg.claimAny()
		if e == nil {
			p.kb.evictionOff()
			return
		}
		p.discard(e, reasonEvict)
	}
}
