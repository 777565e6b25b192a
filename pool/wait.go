package pool

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// hand is what a waiter receives: an object (unchecked: the waiter checks it
// under its own context), a reserved slot to connect with, or "closed".
type hand[T any] struct {
	e      *entry[T]
	slot   bool
	closed bool
}

// waiter is one blocked Acquire. ch has room for exactly the one hand that a
// dequeuer sends after taking the waiter out of the queue, so the send never
// blocks; prev, next and queued are guarded by Pool.mu, and so are the
// writes of objOnly.
type waiter[T any] struct {
	ch         chan hand[T]
	prev, next *waiter[T]
	queued     bool
	// objOnly is set while the waiter backs off after a failed connect
	// (see connRetry): it takes a released object, but no slot to connect
	// with, until its pause is over. Atomic: read without mu by the scans
	// of the queue that look for a slot-taker.
	objOnly atomic.Bool
	// owner is the pool whose queue the waiter joins (set by getWaiter:
	// a keyed pool's keys share the recycler of waiters).
	owner *Pool[T]
}

// waitQueue is an intrusive FIFO list of waiters, guarded by Pool.mu.
type waitQueue[T any] struct {
	head, tail *waiter[T]
}

func (q *waitQueue[T]) pushBack(w *waiter[T]) {
	w.prev, w.next, w.queued = q.tail, nil, true
	if q.tail != nil {
		q.tail.next = w
	} else {
		q.head = w
	}
	q.tail = w
}

func (q *waitQueue[T]) pushFront(w *waiter[T]) {
	w.prev, w.next, w.queued = nil, q.head, true
	if q.head != nil {
		q.head.prev = w
	} else {
		q.tail = w
	}
	q.head = w
}

// remove unlinks w and reports whether it was queued. A keyed pool's
// waiter leaves the budget's queue with it.
func (q *waitQueue[T]) remove(w *waiter[T]) bool {
	if !w.queued {
		return false
	}
	w.owner.rm.unwant(w)
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		q.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		q.tail = w.prev
	}
	w.prev, w.next, w.queued = nil, nil, false
	return true
}

func (q *waitQueue[T]) popFront() *waiter[T] {
	w := q.head
	if w != nil {
		q.remove(w)
	}
	return w
}

// popSlotTaker removes and returns the oldest waiter that takes a slot (not
// backing off after a failed connect), or nil.
func (q *waitQueue[T]) popSlotTaker() *waiter[T] {
	w := q.head
	for w != nil && w.objOnly.Load() {
		w = w.next
	}
	if w != nil {
		q.remove(w)
	}
	return w
}

// hasSlotTaker reports whether a waiter that takes a slot is queued.
func (q *waitQueue[T]) hasSlotTaker() bool {
	for w := q.head; w != nil; w = w.next {
		if !w.objOnly.Load() {
			return true
		}
	}
	return false
}

// getWaiter and putWaiter recycle waiters (and their channels) through
// Pool.waiters; a waiter is put back only once it is out of the queue and
// its channel is empty.
func (p *Pool[T]) getWaiter() *waiter[T] {
	if w, ok := p.waiters.Get().(*waiter[T]); ok {
		w.owner = p // a keyed pool's keys share the recycler
		return w
	}
	return &waiter[T]{ch: make(chan hand[T], 1), owner: p}
}

func (p *Pool[T]) putWaiter(w *waiter[T]) {
	p.waiters.Put(w)
}

// handoff gives h to the oldest waiter, if there is one — for a slot, the
// oldest that takes one. The waiter leaves the queue under mu; the send
// happens after mu is released and never blocks.
func (p *Pool[T]) handoff(h hand[T]) bool {
	p.mu.Lock()
	var w *waiter[T]
	if h.slot {
		w = p.queue.popSlotTaker()
	} else {
		w = p.queue.popFront()
	}
	if w != nil {
		p.state.Add(-1)
	}
	p.mu.Unlock()
	if w == nil {
		return false
	}
	w.ch <- h
	return true
}

// dispatch serves waiters while there are any: an idle object to the oldest,
// else a free slot to the oldest (who then connects). It is the second half
// of both sides of the wake-up protocol: a waiter calls it after enqueueing,
// a releaser after publishing (when it sees waiters), a slot-freer after
// freeing.
func (p *Pool[T]) dispatch() { p.dispatchFrom(false) }

// dispatchFrom is dispatch; with scanOnly it looks for idle objects by the
// registry scan alone, skipping the hints. A waiter's look after it queues
// uses that: the scan is what the wake-up protocol rests on (it loads every
// entry's state), and in the state that makes goroutines queue — every
// object leased — the hints are empty, so popping this P's stack and the
// exchange first only costs.
func (p *Pool[T]) dispatchFrom(scanOnly bool) {
	for {
		s := p.state.Load()
		if s&closedBit != 0 || s&waiterMask == 0 {
			return
		}
		var e *entry[T]
		var src int
		if scanOnly {
			if e = p.reg.claimAny(); e != nil {
				p.counters.steals.Add(1)
				src = srcSteal
			}
		} else {
			e, src = p.take(false)
		}
		if e != nil {
			if src == srcLocal {
				p.counters.localMiss.Add(1) // a local pop that is no acquire
			}
			if !p.handoff(hand[T]{e: e}) {
				// Nobody waits any more: publish it again; the loop then
				// re-checks for a waiter that came in meanwhile (or for a
				// Close that emptied the queue, which the drain covers).
				p.publish(e)
				if p.state.Load()&closedBit != 0 {
					p.drainIdle(reasonClosed)
					return
				}
			}
			continue
		}
		if !p.reserve() {
			if p.live.Load() < p.maxSize.Load() {
				// A keyed pool's key at the global cap, under its own:
				// room may come from another key (see budget).
				p.rm.makeRoom(p)
			}
			return
		}
		if !p.handoff(hand[T]{slot: true}) {
			if testHookSlotUnclaimed != nil {
				testHookSlotUnclaimed()
			}
			if !p.slotUnclaimed() {
				return
			}
		}
	}
}

// testHookSlotUnclaimed, if set, runs when dispatch has found nobody to take
// the slot it reserved, before it gives the slot back (tests only).
var testHookSlotUnclaimed func()

// slotUnclaimed gives back a slot that dispatch reserved and nobody took
// (every waiter gave up, or backs off after a failed connect), and reports
// whether dispatch must look again. It must when a slot-taking waiter
// queued meanwhile: that waiter's own look ran while the slot was still
// reserved, so its reserve failed and it counts on the holder of the slot —
// this dispatch — to hand it on. The look for such a waiter is under mu and
// after the unreserve, so a waiter that queues later finds the slot free
// itself. A waiter whose pause ends says so under mu and dispatches itself.
func (p *Pool[T]) slotUnclaimed() bool {
	p.unreserve()
	if p.state.Load()&closedBit != 0 {
		p.checkDone()
		return false
	}
	p.mu.Lock()
	again := p.queue.hasSlotTaker()
	p.mu.Unlock()
	return again
}

// enqueue queues w — at the back, or at the front for a waiter that keeps
// the place it had — and counts it in state, unless the pool is closed.
// objOnly says whether it takes objects only for now (see waiter).
func (p *Pool[T]) enqueue(w *waiter[T], front, objOnly bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	w.objOnly.Store(objOnly)
	if p.state.Load()&closedBit != 0 {
		return false
	}
	if front {
		p.queue.pushFront(w)
	} else {
		p.queue.pushBack(w)
	}
	p.rm.want(w)
	p.state.Add(1)
	return true
}

// block is the part of an Acquire that may block: it connects in a slot the
// caller reserved (slot), or queues behind earlier waiters until it is handed
// an object or a slot, until its context ends (bounded by AcquireTimeout:
// see blockTimed), or until Close.
//
// The wake-up protocol, waiter's side: announce (enqueue and count, under
// mu), then look once more (dispatch, which hands an idle object or a free
// slot to the oldest waiter, possibly the caller). A releaser publishes, then
// loads the count and, if non-zero, dispatches. The count and the idle set
// are both sequentially consistent atomics, so either the releaser sees the
// waiter or the waiter's dispatch sees the object. Every entry into the
// queue — the first, and each return to its head — is followed by that look:
// while the caller was out of the queue (checking an object, connecting),
// objects released and slots freed did not count it as waiting.
//
// A caller whose object (handed, or freshly connected for it) fails its
// checks goes back to the head of the queue before the object is closed, so
// that the slot that frees — or any object that comes first — is its own.
// With AcquireTimeout set, a caller whose connect fails goes back to the head
// too and retries after a pause (see connRetry), taking any object released
// meanwhile.
//
// queued reports whether the caller queued (counted in Stats.Waits); the
// caller times the whole block (blockTimed), with two clock reads in all.
func (p *Pool[T]) block(ctx context.Context, slot bool) (l Lease[T], queued bool, err error) {
	var w *waiter[T] // made when the caller first queues
	defer func() {
		if w != nil {
			p.putWaiter(w)
		}
	}()
	var bad *entry[T] // an object that failed its checks, to close once queued
	var badReason int
	front := false
	var retry connRetry
	for {
		if !slot {
			if w == nil {
				w = p.getWaiter()
				queued = true
				p.counters.waits.Add(1)
			}
			pause := retry.pause()
			ok := p.enqueue(w, front, pause != nil)
			if bad != nil {
				p.discard(bad, badReason)
				bad = nil
			}
			if !ok {
				return Lease[T]{}, queued, ErrClosed
			}
			p.dispatchFrom(true)
			h, err := p.await(ctx, w, pause)
			retry.stop()
			if err != nil {
				return Lease[T]{}, queued, retry.err(err)
			}
			if h.closed {
				return Lease[T]{}, queued, ErrClosed
			}
			if ctx.Err() != nil {
				// The hand and the end of ctx arrived together: the caller
				// gets its error, the hand goes on.
				p.giveUp(h)
				return Lease[T]{}, queued, retry.err(p.ctxFail(ctx))
			}
			if !h.slot {
				r := p.check(ctx, h.e)
				switch r {
				case 0:
					p.counters.handoffs.Add(1) // an acquire too: see Stats
					return Lease[T]{h.e, h.e.state.Load()}, queued, nil
				case checkCanceled:
					p.giveBack(h.e)
					return Lease[T]{}, queued, retry.err(p.ctxFail(ctx))
				}
				bad, badReason, front = h.e, r, true
				continue
			}
		}
		slot = false
		l, e, r, err := p.connectFor(ctx)
		if e == nil {
			if err != nil && p.retriable(ctx, err) {
				retry.failed(err)
				front = true
				continue
			}
			if _, ended := err.(*waitError); ended {
				err = retry.err(err) // ctx ended during a retry's connect
			}
			return l, queued, err
		}
		bad, badReason, front = e, r, true
	}
}

// await blocks until w is handed something, or ctx ends. A waiter that gives
// up takes mu; if it is still queued it unlinks itself, else a hand is (or
// is about to be) in its channel and it receives it and gives it back:
// nothing is lost. pause, if not nil, fires when a waiter backing off after
// a failed connect (objOnly) may take a slot again: it says so under mu and
// dispatches, which hands it a free slot if there is one.
func (p *Pool[T]) await(ctx context.Context, w *waiter[T], pause <-chan time.Time) (hand[T], error) {
	done := ctx.Done()
	for {
		if done == nil && pause == nil {
			// Nothing can end the wait but a hand (context.Background, no
			// AcquireTimeout): a plain receive, not a select.
			return <-w.ch, nil
		}
		select {
		case h := <-w.ch:
			return h, nil
		case <-pause:
			pause = nil
			p.mu.Lock()
			if w.queued && w.objOnly.Load() {
				p.rm.resumed(w)
			}
			w.objOnly.Store(false)
			p.mu.Unlock()
			p.dispatch()
			continue
		case <-done:
		}
		break
	}
	err := ctxError(ctx)
	p.countErr(err)
	p.mu.Lock()
	left := p.queue.remove(w)
	if left {
		p.state.Add(-1)
	}
	p.mu.Unlock()
	if !left {
		p.giveUp(<-w.ch)
	}
	return hand[T]{}, err
}

// giveUp returns a hand its waiter no longer wants.
func (p *Pool[T]) giveUp(h hand[T]) {
	switch {
	case h.e != nil:
		p.giveBack(h.e)
	case h.slot:
		p.unreserve()
		p.afterFree()
	}
}

// ctxFail counts and returns the error of an Acquire whose ctx has ended.
func (p *Pool[T]) ctxFail(ctx context.Context) error {
	err := ctxError(ctx)
	p.countErr(err)
	return err
}

func (p *Pool[T]) countErr(err error) {
	if we, ok := err.(*waitError); ok && we.timeout {
		p.counters.timeouts.Add(1)
	} else {
		p.counters.cancels.Add(1)
	}
}

// blockTimed is block, timed into the wait histogram; an error that ends
// the Acquire on a deadline is given the pool's state at that moment. With
// AcquireTimeout set, block runs under ctx bounded by the Acquire's deadline
// (begin, when its slow path started, plus AcquireTimeout): every wait,
// connect, retry and check of a handed or fresh object, so that
// AcquireTimeout bounds the whole Acquire.
func (p *Pool[T]) blockTimed(ctx context.Context, begin time.Time, slot bool) (Lease[T], error) {
	p.rm.busy(p, 1)
	defer p.rm.busy(p, -1)
	start := p.now()
	if d := p.cfg.AcquireTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, begin.Add(d), errAcquireTimeoutCause)
		defer cancel()
	}
	l, _, err := p.block(ctx, slot)
	p.counters.waitHist.observe(p.now() - start)
	if err != nil && errors.Is(err, ErrTimeout) {
		err = p.withState(err)
	}
	return l, err
}

// withState adds the pool's state to err's message; err still matches what
// it matched.
func (p *Pool[T]) withState(err error) error {
	idle := int64(p.idleLen()) + p.checking.Load() // under a health check: idle, as in Stats
	live, connecting, closing := p.live.Load(), p.connecting.Load(), p.closing.Load()
	state := fmt.Sprintf("live=%d idle=%d leased=%d waiting=%d",
		live, idle, max(live-idle-connecting-closing, 0), p.state.Load()&waiterMask)
	if p.cfg.Name != "" {
		state = "pool=" + p.cfg.Name + " " + state
	}
	if d := p.rm.describe(); d != "" {
		state += "; " + d // a keyed pool's figures, beside its key's
	}
	return &stateError{err: err, state: state}
}

// stateError is an error with the pool's state when it happened, like
// "pool: acquire timed out: context deadline exceeded (live=8 idle=0
// leased=8 waiting=12)".
type stateError struct {
	err   error
	state string
}

func (e *stateError) Error() string { return e.err.Error() + " (" + e.state + ")" }
func (e *stateError) Unwrap() error { return e.err }
