package pool

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Connect backoff for background connects (TryAcquire's and the
// maintainer's): after n consecutive failures, none starts for
// min(backoffBase<<(n-1), backoffMax).
const (
	backoffBase = 10 * time.Millisecond
	backoffMax  = 5 * time.Second
)

// connReq links an acquirer to the connect made on its behalf. state moves
// from 0 to reqDelivered (by the dialer, which then sends on ch) or to
// reqAbandoned (by the acquirer giving up, after which the dialer keeps the
// result for the pool): exactly one of the two wins.
type connReq[T any] struct {
	state atomic.Int32
	ch    chan connResult[T] // 1-buffered: the dialer's send never blocks
}

const (
	reqDelivered = 1
	reqAbandoned = 2
)

type connResult[T any] struct {
	e   *entry[T]
	err error
}

// startDial starts a connect in a slot the caller reserved. req is nil for a
// background connect (its object goes to a waiter or the idle set).
func (p *Pool[T]) startDial(req *connReq[T]) {
	p.goroutines.Add(1)
	p.connecting.Add(1)
	go p.dial(req)
}

// dial runs one Manager.Connect on its own goroutine, under the pool's
// context (cancelled by Close) and ConnectTimeout, never under the
// acquirer's: a connect outlives an acquirer that gave up (pgx #1259).
func (p *Pool[T]) dial(req *connReq[T]) {
	defer p.goExit()
	var v T
	var err error
	p.counters.connects.Add(1)
	epoch := p.epoch.Load()
	select {
	case p.sem <- struct{}{}:
		if p.ctx.Err() == nil { // both cases may be ready: Close wins
			ctx, cancel := context.WithTimeout(p.ctx, p.cfg.ConnectTimeout)
			v, err = p.mgr.Connect(ctx)
			cancel()
		} else {
			err = ErrClosed
		}
		<-p.sem
	case <-p.ctx.Done():
		err = ErrClosed
	}
	if err != nil && p.ctx.Err() != nil && !errors.Is(err, ErrClosed) {
		// Close cancelled the connect: say so, keeping the manager's error.
		err = fmt.Errorf("%w: %w", ErrClosed, err)
	}
	var e *entry[T]
	if err != nil {
		p.counters.connectErrs.Add(1)
		p.noteFailure()
	} else {
		p.failures.Store(0)
		e = p.newEntry(v, epoch)
	}
	p.connecting.Add(-1)
	if err != nil {
		// Free the slot first: the next waiter may connect at once.
		p.freeSlot()
	}
	if req != nil && req.state.CompareAndSwap(0, reqDelivered) {
		req.ch <- connResult[T]{e, err}
		return
	}
	if e != nil {
		p.giveBack(e)
	}
}

// connectFor connects in a slot the caller reserved and waits for the result
// under ctx and the AcquireTimeout timer t. If the caller gives up first, the
// connect goes on and its object serves the next waiter or goes idle.
func (p *Pool[T]) connectFor(ctx context.Context, t *acqTimer) (Lease[T], error) {
	req := &connReq[T]{ch: make(chan connResult[T], 1)}
	p.startDial(req)
	var r connResult[T]
	var err error
	select {
	case r = <-req.ch:
	case <-ctx.Done():
		err = ctxError(ctx)
	case <-t.c(p.cfg.AcquireTimeout):
		err = errAcquireTimeout
	}
	if err != nil {
		if req.state.CompareAndSwap(0, reqAbandoned) {
			p.countErr(err)
			return Lease[T]{}, err
		}
		r = <-req.ch // delivered at that very instant: take it
	}
	if r.err != nil {
		return Lease[T]{}, fmt.Errorf("pool: connect: %w", r.err)
	}
	e := r.e
	if p.usable(ctx, e) != 0 {
		// Expired before it was handed out (a lifetime shorter than the
		// connect, or a Reset): start over.
		return p.acquireSlow(ctx, true)
	}
	p.counters.acqOther.Add(1)
	return Lease[T]{e, e.state.Load()}, nil
}

// noteFailure records a failed connect and pushes back background connects.
func (p *Pool[T]) noteFailure() {
	n := p.failures.Add(1)
	d := backoffMax
	if n <= 20 {
		d = min(backoffBase<<(n-1), backoffMax)
	}
	p.retryAt.Store(int64(p.now() + d))
}

// backingOff reports whether background connects must wait after failures.
func (p *Pool[T]) backingOff() bool {
	return p.failures.Load() > 0 && int64(p.now()) < p.retryAt.Load()
}

// enqueueClose hands v, to be closed for reason r, to the closer goroutines
// (at most closers of them, started on demand): Manager.Close never runs on
// the caller's goroutine.
//
// v keeps its slot (it counts in live, and in closing) until its
// Manager.Close has returned; only then is it counted as closed, so that
// created == closed + detached + live holds whenever nothing is in flight.
func (p *Pool[T]) enqueueClose(v T, r int) {
	p.closing.Add(1)
	p.cmu.Lock()
	p.closeq = append(p.closeq, closeReq[T]{v, r})
	start := p.nclosers < closers
	if start {
		p.nclosers++
		p.goroutines.Add(1)
	}
	p.cmu.Unlock()
	if start {
		go p.closer()
	}
}

type closeReq[T any] struct {
	v      T
	reason int
}

func (p *Pool[T]) closer() {
	defer p.goExit()
	for {
		p.cmu.Lock()
		if len(p.closeq) == 0 {
			p.closeq = nil
			p.nclosers--
			p.cmu.Unlock()
			return
		}
		c := p.closeq[0]
		p.closeq[0] = closeReq[T]{}
		p.closeq = p.closeq[1:]
		p.cmu.Unlock()
		_ = p.mgr.Close(c.v)
		p.counters.closed[c.reason].Add(1)
		p.closing.Add(-1)
		p.freeSlot()
	}
}

// goExit ends a goroutine the pool started.
func (p *Pool[T]) goExit() {
	if p.goroutines.Add(-1) == 0 {
		p.checkDone()
	}
}

// checkDone closes doneCh once the pool is closed, nothing is live and every
// goroutine it started has exited. Whoever makes the last of these true
// calls it after its own atomic update, so the last one sees all three.
func (p *Pool[T]) checkDone() {
	if p.state.Load()&closedBit != 0 && p.live.Load() == 0 && p.goroutines.Load() == 0 {
		p.doneOnce.Do(func() { close(p.doneCh) })
	}
}

// Close closes the pool: new acquires get ErrClosed, waiters wake with
// ErrClosed, connects in flight are cancelled, idle objects are closed, and
// leased ones are closed when released. It returns nil once nothing is live
// and every goroutine the pool started has exited, or ctx.Err() if ctx ends
// first; closing goes on, and a later Close waits again. Close is
// idempotent.
func (p *Pool[T]) Close(ctx context.Context) error {
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
	select {
	case <-p.doneCh:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
