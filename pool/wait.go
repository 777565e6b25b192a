package pool

import (
	"context"
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
// blocks; prev, next and queued are guarded by Pool.mu.
type waiter[T any] struct {
	ch         chan hand[T]
	prev, next *waiter[T]
	queued     bool
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

// remove unlinks w and reports whether it was queued.
func (q *waitQueue[T]) remove(w *waiter[T]) bool {
	if !w.queued {
		return false
	}
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

// getWaiter and putWaiter recycle waiters (and their channels) through
// Pool.waiters; a waiter is put back only once it is out of the queue and
// its channel is empty.
func (p *Pool[T]) getWaiter() *waiter[T] {
	if w, ok := p.waiters.Get().(*waiter[T]); ok {
		return w
	}
	return &waiter[T]{ch: make(chan hand[T], 1)}
}

func (p *Pool[T]) putWaiter(w *waiter[T]) { p.waiters.Put(w) }

// handoff gives h to the oldest waiter, if there is one. The waiter leaves
// the queue under mu; the send happens after mu is released and never blocks.
func (p *Pool[T]) handoff(h hand[T]) bool {
	p.mu.Lock()
	w := p.queue.popFront()
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
func (p *Pool[T]) dispatch() {
	for {
		s := p.state.Load()
		if s&closedBit != 0 || s&waiterMask == 0 {
			return
		}
		if e, src := p.take(); e != nil {
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
		if p.reserve() {
			if !p.handoff(hand[T]{slot: true}) {
				p.live.Add(-1)
				if p.state.Load()&closedBit != 0 {
					p.checkDone()
					return
				}
			}
			continue
		}
		return
	}
}

// acqTimer is the Config.AcquireTimeout timer of one Acquire, started when
// it first blocks.
type acqTimer struct {
	t *time.Timer
}

func (a *acqTimer) c(d time.Duration) <-chan time.Time {
	if d <= 0 {
		return nil
	}
	if a.t == nil {
		a.t = time.NewTimer(d)
	}
	return a.t.C
}

func (a *acqTimer) stop() {
	if a.t != nil {
		a.t.Stop()
	}
}

// wait queues the caller behind earlier waiters and blocks until it is
// handed an object or a slot, or its context or AcquireTimeout ends.
//
// The wake-up protocol, waiter's side: announce (enqueue and count, under
// mu), then look once more (dispatch, which hands an idle object or a free
// slot to the oldest waiter, possibly the caller). A releaser publishes, then
// loads the count and, if non-zero, dispatches. The count and the idle set
// are both sequentially consistent atomics, so either the releaser sees the
// waiter or the waiter's dispatch sees the object.
func (p *Pool[T]) wait(ctx context.Context) (Lease[T], error) {
	var t acqTimer
	defer t.stop()
	w := p.getWaiter()
	p.mu.Lock()
	if p.state.Load()&closedBit != 0 {
		p.mu.Unlock()
		p.putWaiter(w)
		return Lease[T]{}, ErrClosed
	}
	p.queue.pushBack(w)
	p.state.Add(1)
	p.mu.Unlock()
	p.counters.waits.Add(1)
	start := time.Since(p.start) // monotonic only: cheaper than time.Now
	defer func() { p.counters.waitNanos.Add(int64(time.Since(p.start) - start)) }()
	p.dispatch()
	for {
		var h hand[T]
		var err error
		select {
		case h = <-w.ch:
		case <-ctx.Done():
			err = ctxError(ctx)
		case <-t.c(p.cfg.AcquireTimeout):
			err = errAcquireTimeout
		}
		if err != nil {
			p.countErr(err)
			p.mu.Lock()
			left := p.queue.remove(w)
			if left {
				p.state.Add(-1)
			}
			p.mu.Unlock()
			if !left {
				// Dequeued at that very instant: its hand is (or will be) in
				// the channel. Give it back rather than lose it.
				p.giveUp(<-w.ch)
			}
			p.putWaiter(w)
			return Lease[T]{}, err
		}
		switch {
		case h.closed:
			p.putWaiter(w)
			return Lease[T]{}, ErrClosed
		case h.slot:
			p.putWaiter(w)
			return p.connectFor(ctx, &t)
		}
		e := h.e
		r := p.check(ctx, e)
		if r == 0 {
			p.counters.acqOther.Add(1)
			p.counters.handoffs.Add(1)
			p.putWaiter(w)
			return Lease[T]{e, e.state.Load()}, nil
		}
		// The object failed its checks: close it, and keep our place at the
		// head of the queue, so that the slot it frees (or the next object)
		// comes to us.
		p.mu.Lock()
		closed := p.state.Load()&closedBit != 0
		if !closed {
			p.queue.pushFront(w)
			p.state.Add(1)
		}
		p.mu.Unlock()
		p.discard(e, r)
		if closed {
			p.putWaiter(w)
			return Lease[T]{}, ErrClosed
		}
	}
}

// giveUp returns a hand its waiter no longer wants.
func (p *Pool[T]) giveUp(h hand[T]) {
	switch {
	case h.e != nil:
		p.giveBack(h.e)
	case h.slot:
		p.freeSlot()
	}
}

func (p *Pool[T]) countErr(err error) {
	if we, ok := err.(*waitError); ok && we.timeout {
		p.counters.timeouts.Add(1)
	} else {
		p.counters.cancels.Add(1)
	}
}
