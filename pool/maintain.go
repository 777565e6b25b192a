package pool

import "time"

// reapEvery is the number of clock ticks between two reaping passes.
const reapEvery = 4

// clockResolution is the coarsest tick of the pool's clock.
const clockResolution = 100 * time.Millisecond

// tickFor returns the maintainer's tick, which is also the resolution of the
// coarse clock: an eighth of the shortest of MaxIdleTime, MaxLifetime,
// HealthCheckPeriod and LeakThreshold, clamped to [1ms, clockResolution];
// clockResolution when none is set.
func tickFor(c Config) time.Duration {
	var d time.Duration
	for _, x := range []time.Duration{c.MaxIdleTime, c.MaxLifetime, c.HealthCheckPeriod, c.LeakThreshold} {
		if x > 0 && (d == 0 || x < d) {
			d = x
		}
	}
	// At most clockResolution: the tick is also the resolution of
	// Metrics.LastUsed, which managers use to decide when to ping.
	if d == 0 {
		return clockResolution
	}
	return min(max(d/8, time.Millisecond), clockResolution)
}

// maintain is the pool's one maintainer goroutine: it advances the coarse
// clock every tick, keeps MinIdle warm, and reaps idle objects (see reap):
// every reapEvery ticks when MaxIdleTime or MaxLifetime is set, when poked
// (Reset, SetMaxSize), and at any tick that finds an idle object made before
// the last Reset or a surplus left by a shrink. It exits when Close cancels
// the pool's context.
func (p *Pool[T]) maintain() {
	defer p.goExit()
	tk := time.NewTicker(p.tick)
	defer tk.Stop()
	p.topUpMinIdle()
	for ticks := 1; ; ticks++ {
		poked := false
		select {
		case <-p.ctx.Done():
			return
		case <-tk.C:
		case <-p.kick:
			poked = true
		}
		p.publishClock()
		p.tend(ticks, poked)
		if p.cfg.HealthCheckPeriod > 0 {
			p.healthTick()
		}
	}
}

// tend is a tick's work but the clock and the health checks, which a keyed
// pool's maintainer does for all its keys at once: reap when due, look for
// leaks, keep MinIdle.
func (p *Pool[T]) tend(ticks int, poked bool) {
	timed := p.cfg.MaxIdleTime > 0 || p.cfg.MaxLifetime > 0
	if poked || (timed && ticks%reapEvery == 0) || p.needsReap() {
		p.reap()
	}
	if p.cfg.LeakThreshold > 0 {
		p.findLeaks()
	}
	p.topUpMinIdle()
}

// needsReap reports whether a pass has work that cannot wait for the timed
// one: an idle object made before the last Reset (its connect straddled the
// Reset, or it was released as the Reset's own pass ran), or objects above
// MaxSize after a shrink. It reads every registered entry's epoch, which
// never changes after registration: O(live) loads per tick.
func (p *Pool[T]) needsReap() bool {
	if s := p.state.Load(); s&shrinkingBit != 0 && p.kept() > p.maxSize.Load() {
		return true
	}
	epoch := p.epoch.Load()
	stale := false
	p.reg.each(func(e *entry[T]) {
		if e.epoch != epoch && e.state.Load()&1 == 0 {
			stale = true
		}
	})
	return stale
}

// reap visits every idle object, claiming one at a time (so that acquirers
// find the others meanwhile), and closes it if it is expired (a Reset,
// lifetime, uses), surplus after a shrink (exactly the surplus: see
// claimSurplus), or idle longer than MaxIdleTime while more than MinIdle
// objects are idle; else it gives it back. An object is closed for idleness
// only by its own idle time, whatever order the exchange hands objects out
// in, and never below MinIdle: an unused pool keeps MinIdle objects until
// their lifetimes end. No lock is held while the Manager runs.
//
// An object that cannot be due — made since the last Reset, within its
// lifetime, idle for less than MaxIdleTime, no shrink under way — is not
// claimed at all (the fields read for that are immutable, or atomic): a
// claimed object looks held, and an Acquire looking for the most recently
// released idle object (claimYoungest) would take an older one instead,
// keeping alive what should age out.
func (p *Pool[T]) reap() {
	idle := p.idleLen() // counts down as idle objects close
	now := p.clock.Load().ns
	epoch := p.epoch.Load()
	p.reg.each(func(e *entry[T]) {
		if e.state.Load()&1 != 0 || !p.mayReap(e, now, epoch) {
			return
		}
		if _, ok := claim(e); !ok {
			return
		}
		r := p.expired(e)
		switch {
		case r != 0:
		case p.state.Load()&shrinkingBit != 0 && p.claimSurplus():
			idle--
			p.closeClaimed(e, reasonShrink, nil)
			return
		case p.maxIdle > 0 && now-e.lastUsed.Load() >= p.maxIdle+int64(p.tick) && idle > p.minIdle():
			// lastUsed is the clock's tick at the release, up to one tick
			// before it: one tick more makes sure the object really has
			// been idle MaxIdleTime.
			r = reasonIdle
		}
		if r != 0 {
			idle--
			p.discard(e, r)
			return
		}
		p.giveBack(e)
	})
}

// mayReap reports whether reap might close e, an object it has not claimed,
// at now: from its immutable fields (epoch, deadline) and its atomic
// lastUsed. (An idle object never has its uses spent: the release that
// spent them closed it.)
func (p *Pool[T]) mayReap(e *entry[T], now int64, epoch uint32) bool {
	return e.epoch != epoch || p.state.Load()&shrinkingBit != 0 ||
		(e.deadline != 0 && now >= e.deadline) ||
		(p.maxIdle > 0 && now-e.lastUsed.Load() >= p.maxIdle+int64(p.tick))
}

// topUpMinIdle starts background connects while fewer than MinIdle objects
// are idle (within MaxSize and MaxConnecting). Objects under a health check
// count as idle. It never holds more than half the MaxConnecting slots
// (at least one) with connects of its own, so that connects to a server
// that does not answer (a network blackhole: each hangs until
// ConnectTimeout) leave room for the connects callers ask for; and while
// connects fail it probes: no connect before the back-off has passed, and
// then one at a time.
func (p *Pool[T]) topUpMinIdle() {
	minIdle := p.minIdle()
	if minIdle == 0 || p.state.Load()&closedBit != 0 {
		return
	}
	connecting := int(p.connecting.Load())
	need := min(minIdle-p.idleLen()-int(p.checking.Load())-connecting, p.cfg.MaxConnecting-connecting,
		max(p.cfg.MaxConnecting/2, 1)-int(p.bgDials.Load()))
	if p.failures.Load() > 0 {
		if p.backingOff() || connecting > 0 {
			return
		}
		need = min(need, 1)
	}
	for ; need > 0 && p.reserve(); need-- {
		p.startBackgroundDial()
	}
}

// minIdle is MinIdle capped at MaxSize (which SetMaxSize may have lowered
// below it), as database/sql caps MaxIdleConns at MaxOpenConns.
func (p *Pool[T]) minIdle() int {
	return int(min(int64(p.cfg.MinIdle), p.maxSize.Load()))
}
