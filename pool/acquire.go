package pool

import (
	"context"
	"time"

	"github.com/poolkit/poolkit/internal/shard"
)

// Acquire returns a lease on an object: an idle one if there is one, else a
// new one if the pool is below [Config.MaxSize], else one released to it
// while it waits, in FIFO order behind earlier waiters. Every object handed
// out passes the expiry checks and, if it was used before,
// [manager.Manager.Recycle] under ctx (unless the manager has none: see
// skipsRecycle).
//
// An Acquire whose ctx has already ended returns its error and hands out
// nothing; so does one whose ctx ends while it waits or connects, even if an
// object arrives at that same moment (the object goes to the next waiter or
// back to the pool). A Recycle that fails while ctx has ended is taken as the
// caller's cancellation, not the object's fault: the object stays in the
// pool (unless the error matches [manager.ErrBroken]). Deadlines (ctx's, or
// [Config.AcquireTimeout], which bounds the whole Acquire across every retry)
// end it with an error matching [ErrTimeout] and
// [context.DeadlineExceeded]; a cancellation, [context.Canceled]; both keep
// [context.Cause]. A connect error is returned wrapped (a connect that ran
// past [Config.ConnectTimeout] matches [ErrTimeout]); with AcquireTimeout
// set, only once retries have failed until the deadline. After
// [Pool.Close], Acquire returns [ErrClosed], and only that. A nil ctx panics.
func (p *Pool[T]) Acquire(ctx context.Context) (Lease[T], error) {
	// The search, in order: this P's stack of hints (the fast path below),
	// then the exchange, then a scan of every live object, which reaches
	// those idle on other Ps' stacks (take, on the slow path); then a
	// connect within MaxSize, else the FIFO queue (block). The fast path
	// reads ctx once (ctx.Err, never ctx.Done) and the clock as one load;
	// see docs/DESIGN.md, Acquire.
	if ctx == nil {
		panic("pool: Acquire: nil Context")
	}
	if ctx.Err() != nil {
		return p.acquireEnded(ctx, true)
	}
	if p.state.Load()&(closedBit|acqHookBit|waiterMask) == 0 {
		// Local.Pop's steps, inlined: the only calls are the runtime's pin
		// and unpin. A nil stack (synchronised builds, or a P beyond the
		// table) misses here; the slow path's take pops the whole way.
		st := p.local.Load().Stack(shard.Enter())
		e, ok := st.Pop()
		shard.Exit()
		if ok {
			if gen, ok := claim(e); ok {
				// check, by hand: no call for an object that needs no
				// Recycle, and the guard's defer is Acquire's own (see
				// check and recycle): in a function of its own the guard
				// cost a manager with a check 13 instructions more per
				// Acquire; here it costs one without a check 12.
				r := p.onHand(e)
				if r == 0 {
					if e.m.Uses == 0 || !p.recycles {
						e.m.Uses++
						return Lease[T]{e, gen}, nil
					}
					armed := true
					defer e.closeIfPanicked(&armed, reasonRecycle)
					err := p.rec.Recycle(ctx, e.value, e.m)
					armed = false
					if err == nil {
						e.m.Uses++
						return Lease[T]{e, gen}, nil
					}
					r = recycleFailed(ctx, err)
				}
				p.localFailed(ctx, e, r)
				if r == checkCanceled || (r != checkAged && ctx.Err() != nil) {
					return Lease[T]{}, p.ctxFail(ctx)
				}
			} else {
				p.counters.stale.Add(1)
			}
		}
	}
	if p.state.Load()&acqHookBit != 0 {
		return p.acquireHooked(ctx, true)
	}
	return p.acquireSlow(ctx, true)
}

// acquireHinted is Acquire's fast path from the pop on, for a keyed pool's
// Acquire, which pops e from this P's stack of p's in the pinned section
// that found p (see Keyed.Acquire) after the same look at ctx and state:
// the same steps as Acquire's, a copy that the keyed behaviour tests run.
// It reports done false when the caller must go on as Acquire's slow path
// does (the hint was stale, or its object failed a check that leaves ctx
// live).
func (p *Pool[T]) acquireHinted(ctx context.Context, e *entry[T]) (l Lease[T], done bool, err error) {
	if gen, ok := claim(e); ok {
		r := p.onHand(e)
		if r == 0 {
			if e.m.Uses == 0 || !p.recycles {
				e.m.Uses++
				return Lease[T]{e, gen}, true, nil
			}
			armed := true
			defer e.closeIfPanicked(&armed, reasonRecycle)
			err := p.rec.Recycle(ctx, e.value, e.m)
			armed = false
			if err == nil {
				e.m.Uses++
				return Lease[T]{e, gen}, true, nil
			}
			r = recycleFailed(ctx, err)
		}
		p.localFailed(ctx, e, r)
		if r == checkCanceled || (r != checkAged && ctx.Err() != nil) {
			return Lease[T]{}, true, p.ctxFail(ctx)
		}
	} else {
		p.counters.stale.Add(1)
	}
	return Lease[T]{}, false, nil
}

// localFailed handles an object claimed through a local hint that failed
// its check r: it goes back if the caller's context ended, or without a hint
// if it has aged (the slow path then picks the most recently released
// object), else it is closed.
func (p *Pool[T]) localFailed(ctx context.Context, e *entry[T], r int) {
	p.counters.localMiss.Add(1)
	switch r {
	case checkCanceled:
		p.giveBack(e)
	case checkAged:
		p.unclaim(e)
	default:
		p.discard(e, r)
	}
}

// TryAcquire is Acquire without waiting: it returns an idle object if there
// is one and nobody is waiting, else [ErrExhausted] at once, after starting a
// background connect if the pool is below MaxSize, so that a retry soon
// succeeds (also right after connects have been failing: the back-off of the
// pool's own connects does not hold a caller's back). After Close it
// returns [ErrClosed]; on an ended ctx, ctx's error. A nil ctx panics.
func (p *Pool[T]) TryAcquire(ctx context.Context) (Lease[T], error) {
	if ctx == nil {
		panic("pool: TryAcquire: nil Context")
	}
	if ctx.Err() != nil {
		return p.acquireEnded(ctx, false)
	}
	if p.state.Load()&acqHookBit != 0 {
		return p.acquireHooked(ctx, false)
	}
	return p.acquireSlow(ctx, false)
}

func (p *Pool[T]) acquireSlow(ctx context.Context, wait bool) (Lease[T], error) {
	var begin time.Time // AcquireTimeout counts from here (see blockTimed)
	if wait && p.cfg.AcquireTimeout > 0 {
		begin = time.Now()
	}
	s := p.state.Load()
	if s&closedBit != 0 {
		return Lease[T]{}, ErrClosed
	}
	if s&waiterMask == 0 {
		for {
			e, src := p.take(p.maxIdle != 0)
			if e == nil {
				break
			}
			r := p.check(ctx, e)
			if r == 0 {
				if src != srcLocal {
					p.counters.acqOther.Add(1)
				}
				return Lease[T]{e, e.state.Load()}, nil
			}
			if src == srcLocal {
				p.counters.localMiss.Add(1)
			}
			if r == checkCanceled {
				p.giveBack(e)
				return Lease[T]{}, p.ctxFail(ctx)
			}
			p.discard(e, r)
			if ctx.Err() != nil { // a broken object's check outlived the caller
				return Lease[T]{}, p.ctxFail(ctx)
			}
		}
		if !wait {
			// The caller asked: its connect starts whatever the
			// maintainer's back-off says (see topUpMinIdle).
			if p.reserve() {
				p.startDial(ctx, nil)
			} else {
				p.rm.tryRoom(p) // a keyed pool at its cap: room for a retry
			}
			return Lease[T]{}, ErrExhausted
		}
		if p.reserve() {
			return p.blockTimed(ctx, begin, true)
		}
	} else if !wait {
		return Lease[T]{}, ErrExhausted
	}
	return p.blockTimed(ctx, begin, false)
}

// acquireHooked is the slow path of an Acquire or TryAcquire when an
// Observer or LeakThreshold is set (acqHookBit keeps such a pool off the
// fast path), and of one whose ctx had ended before it began, with an
// Observer (see acquireEnded).
//
// Every AcquireStart has its AcquireEnd: if the Acquire panics (a Recycle
// did), AcquireEnd is told so, with a *PanicError, before the panic goes on;
// if AcquireEnd itself panics after a successful Acquire, the object is
// given back before the panic reaches the caller, so that no slot is lost.
func (p *Pool[T]) acquireHooked(ctx context.Context, wait bool) (Lease[T], error) {
	obs := p.cfg.Observer
	if obs == nil {
		return p.acquireTracked(ctx, wait)
	}
	start := p.now()
	if ctx = obs.AcquireStart(ctx); ctx == nil {
		panic("pool: Observer.AcquireStart returned a nil Context")
	}
	returned := false
	defer func() {
		if returned {
			return
		}
		r := recover() // nil: runtime.Goexit
		obs.AcquireEnd(ctx, AcquireEvent{Wait: p.now() - start, Err: recovered("Recycle", r)})
		if r != nil {
			panic(r)
		}
	}()
	l, err := p.acquireTracked(ctx, wait)
	returned = true
	ev := AcquireEvent{Wait: p.now() - start, Err: err}
	if err == nil {
		ev.ID = l.e.m.ID
	}
	ended := false
	defer func() {
		if !ended && err == nil {
			p.put(l.e, l.gen) // AcquireEnd panicked: the caller never gets the lease
		}
	}()
	obs.AcquireEnd(ctx, ev)
	ended = true
	return l, err
}

// acquireTracked is acquireSlow behind a check of ctx (the one AcquireStart
// returned may have ended) and with the leak record, when LeakThreshold is
// set: its clock starts as the lease is obtained, not as the Acquire began,
// so that time spent waiting in line is not counted as time held.
func (p *Pool[T]) acquireTracked(ctx context.Context, wait bool) (Lease[T], error) {
	if ctx.Err() != nil {
		return Lease[T]{}, p.ctxFail(ctx)
	}
	l, err := p.acquireSlow(ctx, wait)
	if err == nil && p.cfg.LeakThreshold > 0 {
		p.trackLease(ctx, l, p.now())
	}
	return l, err
}

// acquireEnded is an Acquire or TryAcquire whose ctx had ended before it
// began: it hands out nothing and returns ctx's error, after the Observer's
// AcquireStart and AcquireEnd if there is one (a tracer sees every call, as
// pgxpool's does). Off the fast path: a pool without an Observer pays for it
// nothing but this call in the branch of an ended context.
//
//go:noinline
func (p *Pool[T]) acquireEnded(ctx context.Context, wait bool) (Lease[T], error) {
	if p.cfg.Observer != nil {
		return p.acquireHooked(ctx, wait)
	}
	return Lease[T]{}, p.ctxFail(ctx)
}
