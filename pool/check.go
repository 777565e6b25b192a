package pool

import (
	"context"
	"errors"

	"github.com/poolkit/poolkit/manager"
)

// Reasons an object is closed.
const (
	reasonLifetime = iota + 1
	reasonIdle
	reasonUses
	reasonRecycle
	reasonDestroy
	reasonReset
	reasonReleaseCheck
	reasonShrink
	reasonClosed
	reasonMaxIdle
	reasonHealth
	reasonEvict
	reasonEvictSurplus
	reasonEvictHot
	nReasons
)

// checkCanceled is what check returns when Recycle failed while the caller's
// context had ended: the object is not at fault and goes back to the pool.
const checkCanceled = -1

// checkAged is what onHand returns for an object idle since an earlier clock
// tick, with MaxIdleTime set: the object goes back, and the slow path takes
// the most recently released idle object instead (see take).
const checkAged = -2

// expired runs the expiry checks (Reset epoch, lifetime, uses) on an object
// its caller owns, against the coarse clock. It returns 0 or the reason to
// close it. Idle time is not among them: only the maintainer closes an
// object for idleness (see reap), so that an object in hand is used rather
// than closed and replaced.
func (p *Pool[T]) expired(e *entry[T]) int {
	if e.epoch != p.epoch.Load() {
		return reasonReset
	}
	if p.expiry {
		switch {
		case e.deadline != 0 && p.clock.Load().ns >= e.deadline:
			return reasonLifetime
		case p.maxUses != 0 && e.m.Uses >= p.maxUses:
			return reasonUses
		}
	}
	return 0
}

// onHand is expired for the Acquire fast path: with MaxIdleTime set, an
// object released before the current clock tick is also refused
// (checkAged), so that reuse stays on the most recently released objects
// and the others age out (see take). A pool without expiry options pays
// nothing more than expired's test.
func (p *Pool[T]) onHand(e *entry[T]) int {
	if e.epoch != p.epoch.Load() {
		return reasonReset
	}
	if p.expiry {
		now := p.clock.Load().ns
		switch {
		case e.deadline != 0 && now >= e.deadline:
			return reasonLifetime
		case p.maxUses != 0 && e.m.Uses >= p.maxUses:
			return reasonUses
		case p.maxIdle != 0 && e.lastUsed.Load() != now:
			return checkAged
		}
	}
	return 0
}

// check decides whether an object its caller took may be handed out: the
// expiry checks, then Recycle if it was used before (and the manager has a
// Recycle: see skipsRecycle). On success it counts
// the use and returns 0; otherwise it returns checkCanceled (Recycle failed
// and ctx has ended: the caller keeps the object and gives it back) or the
// reason to close the object (the caller closes it).
func (p *Pool[T]) check(ctx context.Context, e *entry[T]) int {
	if r := p.expired(e); r != 0 {
		return r
	}
	if e.m.Uses != 0 && p.recycles {
		return p.recycle(ctx, e)
	}
	e.m.Uses++
	return 0
}

// recycle runs Manager.Recycle on e, which the caller took, under ctx; on
// success it counts the use and returns 0, else what recycleFailed says.
//
// Should Recycle panic (or call runtime.Goexit), the deferred call closes
// the object and frees its slot before the panic goes on to the caller: a
// panicking manager costs one object, not a slot for good. The defer is
// open-coded (a flag on the stack, tested at return); its cost is in
// DESIGN.md. Acquire's fast path has the same steps inline, so that the
// guard's defer is open-coded in Acquire rather than a call of its own (13
// instructions per Acquire with a check; decision 0011).
func (p *Pool[T]) recycle(ctx context.Context, e *entry[T]) int {
	armed := true
	defer e.closeIfPanicked(&armed, reasonRecycle)
	err := p.rec.Recycle(ctx, e.value, e.m)
	armed = false
	if err != nil {
		return recycleFailed(ctx, err)
	}
	e.m.Uses++
	return 0
}

// recycleFailed is what check returns when Recycle failed with err:
// checkCanceled if ctx has ended (the caller's cancellation, not the
// object's fault) and the manager did not declare the object broken (an
// error matching manager.ErrBroken), else reasonRecycle.
func recycleFailed(ctx context.Context, err error) int {
	if ctx.Err() != nil && !errors.Is(err, manager.ErrBroken) {
		return checkCanceled
	}
	return reasonRecycle
}

// closeIfPanicked is deferred around a Manager call on an object the caller
// holds, with *armed true until the call returns. Should the call panic (or
// call runtime.Goexit), *armed is still true: the object is closed for
// reason r and its slot freed before the panic goes on to the caller. The
// flag lives on the caller's stack, not in the entry: by the time the
// deferred call runs (at the caller's return) the object may have been given
// back and be under another holder's check.
func (e *entry[T]) closeIfPanicked(armed *bool, r int) {
	if *armed { // small enough to inline into the deferred call
		e.panicked(r)
	}
}

// panicked closes e, whose Manager call panicked, for reason r. Not inlined,
// so that closeIfPanicked is.
//
//go:noinline
func (e *entry[T]) panicked(r int) {
	e.p.discard(e, r)
}
