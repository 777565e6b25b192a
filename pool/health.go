package pool

import (
	"context"
	"errors"
	"sync"

	"github.com/poolkit/poolkit/manager"
)

// Health checks.
//
// Every HealthCheckPeriod the maintainer starts a pass (on a goroutine of
// its own, so that the clock keeps ticking; one pass at a time) that visits
// every idle object, claiming one at a time like reap, and checks those idle
// for at least the period with Manager.Recycle, at most MaxConnecting at
// once. A claimed object is held: it is not handed out, and acquirers find
// the others, connect or wait as they would anyway: an acquirer waits for a
// checked object only when nothing else is idle and the pool is full, and
// then at most one check (bounded by CheckTimeout, else the period).
// A passed object is given back (to the oldest waiter, or idle), keeping its
// last-used time, so that an object that stays idle is checked every period;
// a failed one is closed (CloseHealthCheck), and the maintainer's next tick
// connects replacements while fewer than MinIdle are idle. Objects under
// check count as idle for MinIdle (checking), so a pass makes no connects.

// healthTick starts a pass when one is due. Maintainer only.
func (p *Pool[T]) healthTick() {
	if now, ok := p.healthDue(); ok {
		p.goStart()
		go func() {
			defer p.goExit()
			p.healthPass(now)
		}()
	}
}

// healthDue reports whether a pass is due — the period has come round, the
// manager has a check to run (it does not skip Recycle: see
// skipsRecycle) and no pass runs — and if so marks one running
// and returns its time; the caller runs healthPass. Maintainer only.
func (p *Pool[T]) healthDue() (now int64, ok bool) {
	if !p.recycles {
		return 0, false
	}
	now = p.clock.Load().ns
	if now < p.nextHealth {
		return 0, false
	}
	p.nextHealth = now + int64(p.cfg.HealthCheckPeriod)
	return now, p.healthRunning.CompareAndSwap(false, true)
}

// healthPass checks every object idle since before now − HealthCheckPeriod,
// and then marks the pass done.
func (p *Pool[T]) healthPass(now int64) {
	defer p.healthRunning.Store(false)
	period := int64(p.cfg.HealthCheckPeriod)
	sem := make(chan struct{}, p.cfg.MaxConnecting)
	var wg sync.WaitGroup
	p.reg.each(func(e *entry[T]) {
		if e.state.Load()&1 != 0 || p.ctx.Err() != nil {
			return
		}
		select {
		case sem <- struct{}{}:
		case <-p.ctx.Done():
			return
		}
		if _, ok := claim(e); !ok {
			<-sem
			return
		}
		if now-e.lastUsed.Load() < period {
			p.giveBack(e)
			<-sem
			return
		}
		p.checking.Add(1) // until healthCheck gives it back or closes it
		wg.Go(func() {
			defer func() { <-sem }()
			p.healthCheck(e)
		})
	})
	wg.Wait()
}

// healthCheck checks e, which the caller claimed and counted in checking,
// and gives it back or closes it. Recycle runs under the pool's context
// (cancelled by Close), bounded by CheckTimeout (the manager's wrapper) or
// else by the period. The check is counted as it starts, so one that panics
// is counted too; e leaves checking as it is given back or closed, so that
// it is in one state or another throughout (Stats counts checking objects
// as idle).
func (p *Pool[T]) healthCheck(e *entry[T]) {
	if r := p.expired(e); r != 0 {
		p.checking.Add(-1)
		p.discard(e, r)
		return
	}
	ctx := p.ctx
	if p.cfg.CheckTimeout == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.cfg.HealthCheckPeriod)
		defer cancel()
	}
	p.counters.healthChecks.Add(1)
	// A Recycle that panics here has no caller to reach: the panic is
	// recovered, after the guard has closed the object, and counts as a
	// failed check.
	defer func() { _ = recover() }()
	armed := true
	defer e.healthPanicked(&armed)
	err := p.rec.Recycle(ctx, e.value, e.m)
	armed = false
	p.checking.Add(-1)
	if err != nil && (p.ctx.Err() == nil || errors.Is(err, manager.ErrBroken)) {
		p.discard(e, reasonHealth)
		return
	}
	p.giveBack(e) // closed by giveBack if the pool is closing
}

// healthPanicked is deferred around a health check's Recycle, with *armed
// true until it returns: should it panic, the object leaves checking and is
// closed (a failed check).
func (e *entry[T]) healthPanicked(armed *bool) {
	if *armed {
		e.p.checking.Add(-1)
		e.p.discard(e, reasonHealth)
	}
}
