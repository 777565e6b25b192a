package pool

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
)

// Close closes the pool: new acquires get [ErrClosed], waiters wake with
// ErrClosed, connects in flight are cancelled, idle objects are closed, and
// leased ones are closed when released. It returns nil once nothing is live
// and every goroutine the pool started has exited. If ctx ends first it
// returns an error that matches ctx's (errors.Is) and says what it was still
// waiting for, such as "pool: Close: context deadline exceeded (still
// waiting for 2 leased, 1 closing)"; closing goes on, and a later Close
// waits again. Close is idempotent.
func (p *Pool[T]) Close(ctx context.Context) error {
	p.shut()
	return p.waitDone(ctx)
}

// shut is Close's work but the wait: it sets the closed bit, ends the
// pool's context, wakes every waiter with ErrClosed and closes the idle
// objects. Only the first call does anything.
func (p *Pool[T]) shut() {
	p.mu.Lock()
	old := p.state.Or(closedBit)
	var ws []*waiter[T]
	if old&closedBit == 0 {
		for w := p.queue.popFront(); w != nil; w = p.queue.popFront() {
			ws = append(ws, w)
			p.state.Add(-1)
		}
	}
	p.mu.Unlock()
	if old&closedBit == 0 {
		p.cancel(ErrClosed)
		for _, w := range ws {
			w.ch <- hand[T]{closed: true}
		}
		p.drainIdle(reasonClosed)
		p.dropHints()
		p.checkDone()
	}
}

// waitDone is Close's wait (see Close).
func (p *Pool[T]) waitDone(ctx context.Context) error {
	select {
	case <-p.doneChan():
		return nil
	case <-ctx.Done():
		return p.closeUnfinished(ctx)
	}
}

// closeUnfinished is Close's error when ctx ends first: ctx's error, and
// what is left (a snapshot): objects still leased (each is closed when
// released), connects in flight, objects in Manager.Close, and the pool's
// other goroutines still running (a health check pass, the maintainer on
// its way out).
func (p *Pool[T]) closeUnfinished(ctx context.Context) error {
	sl := p.readSlots()
	idle := int64(p.idleLen()) + p.checking.Load()
	leased := max(sl.live-idle-sl.connecting-sl.closing, 0)
	var left []string
	for _, n := range []struct {
		n    int64
		what string
	}{
		{leased, "leased"},
		{idle, "idle"},
		{sl.connecting, "connecting"},
		{sl.closing, "closing"},
		{p.goroutines.Load() - sl.connecting - sl.closing, "other goroutines"},
	} {
		if n.n > 0 {
			left = append(left, strconv.FormatInt(n.n, 10)+" "+n.what)
		}
	}
	if len(left) == 0 {
		left = append(left, "its last goroutine to exit")
	}
	who := ""
	if p.cfg.Name != "" {
		who = "pool=" + p.cfg.Name + " "
	}
	return fmt.Errorf("pool: Close: %w (%sstill waiting for %s)", ctx.Err(), who, strings.Join(left, ", "))
}

// checkDone closes doneCh once the pool is closed, nothing is live and every
// goroutine it started has exited. Whoever makes the last of these true
// calls it after its own atomic update, so the last one sees all three.
func (p *Pool[T]) checkDone() {
	if p.state.Load()&closedBit != 0 && p.live.Load() == 0 && p.goroutines.Load() == 0 {
		p.doneOnce.Do(func() {
			p.smu.Lock()
			p.done = true
			if p.doneCh != nil {
				close(p.doneCh)
			}
			p.smu.Unlock()
		})
	}
}

// doneChan returns a channel closed once the pool is done (see checkDone).
// It is made by the first call: a pool that is never waited for (most of
// a keyed pool's keys) never makes one.
func (p *Pool[T]) doneChan() <-chan struct{} {
	p.smu.Lock()
	defer p.smu.Unlock()
	if p.doneCh == nil {
		p.doneCh = make(chan struct{})
		if p.done {
			close(p.doneCh)
		}
	}
	return p.doneCh
}

// goStart counts a goroutine the pool is about to start; goExit ends it.
func (p *Pool[T]) goStart() {
	p.goroutines.Add(1)
	p.rm.goroutine(1)
}

// goExit ends a goroutine the pool started.
func (p *Pool[T]) goExit() {
	if p.goroutines.Add(-1) == 0 {
		p.checkDone()
	}
	p.rm.goroutine(-1)
}

// discard closes an object the caller holds, for reason r, and frees its
// slot once it is closed.
//
// The slot stays taken until Manager.Close has returned, so that the server
// never sees more than MaxSize connections: a waiter does not dial a
// replacement while the old connection is still open.
func (p *Pool[T]) discard(e *entry[T], r int) {
	p.closeStarted()
	p.closeClaimed(e, r, nil)
}

// evict is discard for an object a keyed pool closes (reason r) to make
// room for the key whose pool is to: its slot, once closed, goes to that
// key first (see budget).
func (p *Pool[T]) evict(e *entry[T], r int, to *Pool[T]) {
	p.closeStarted()
	p.closeClaimed(e, r, to)
}

// closeClaimed is discard for an object already counted as closing (see
// claimSurplus). Each object is closed on a goroutine of its own: after a
// mass failure every close runs at once (at most one per slot), so the pool
// is back to strength one Manager.Close later, not one per closer.
func (p *Pool[T]) closeClaimed(e *entry[T], r int, to *Pool[T]) {
	v := e.value
	p.forget(e)
	p.goStart()
	go p.closeOne(v, r, p.noteClose(e), to)
}

// closeOne runs Manager.Close on v, closed for reason r, on a goroutine of
// its own, and then frees its slot: until Close returns, v counts in live
// and in closing, so that created == closed + detached + live holds whenever
// nothing is in flight. A Close that panics or calls runtime.Goexit counts
// as a close that failed with a *PanicError; the slot is freed all the same.
func (p *Pool[T]) closeOne(v T, r int, n *closeNote, to *Pool[T]) {
	defer p.goExit()
	var err error = &PanicError{Op: "Close"} // replaced unless Close calls runtime.Goexit
	defer func() { p.closedOne(r, n, err, to) }()
	err = p.callClose(v)
}

// callClose is Manager.Close with its panic recovered into a *PanicError.
func (p *Pool[T]) callClose(v T) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = recovered("Close", r)
		}
	}()
	return p.mgr.Close(v)
}

// closedOne records the outcome of a Manager.Close: the error, the
// Observer, then the slot.
func (p *Pool[T]) closedOne(r int, n *closeNote, err error, to *Pool[T]) {
	if err != nil {
		if pe, ok := err.(*PanicError); ok && pe.Value == nil && pe.Stack == nil {
			pe.Stack = debug.Stack() // runtime.Goexit
		}
		p.counters.closeErrs.Add(1)
	}
	if n != nil {
		p.observeClose(n, r, err)
	}
	p.closed(r, to)
}

// forget removes an entry the caller holds (and will never give back) from
// the registry, and drops its value: hints may still point at the entry
// until they are popped, but not at the object.
func (p *Pool[T]) forget(e *entry[T]) {
	p.reg.remove(e)
	e.leak.Store(nil) // a leak record holds its acquirer's context
	var zero T
	e.value = zero
}
