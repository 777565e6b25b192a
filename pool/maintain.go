package pool

import (
	"cmp"
	"slices"
	"time"
)

// reapEvery is the number of clock ticks between two reaping passes.
const reapEvery = 4

// clockResolution is the coarsest tick of the pool's clock.
const clockResolution = 100 * time.Millisecond

// tickFor returns the maintainer's tick, which is also the resolution of the
// coarse clock: an eighth of the shortest of MaxIdleTime and MaxLifetime,
// clamped to [1ms, clockResolution]; clockResolution when neither is set.
func tickFor(c Config) time.Duration {
	var d time.Duration
	for _, x := range []time.Duration{c.MaxIdleTime, c.MaxLifetime} {
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

// peakTracker keeps the recent peak of objects in use (leased, connecting,
// or wanted by waiters) over two half-windows of MaxIdleTime. It is fed a
// sample every tick and the peakHint connects leave between ticks. Owned by
// the maintainer goroutine.
type peakTracker struct {
	cur, prev int
	started   time.Duration // start of the current half-window
	since     time.Duration // first sample: history is complete a window later
	sampled   bool
}

func (t *peakTracker) sample(now time.Duration, inUse int, window time.Duration) {
	if !t.sampled {
		t.sampled, t.since, t.started = true, now, now
	}
	if now-t.started >= window/2 {
		t.prev, t.cur, t.started = t.cur, 0, now
	}
	t.cur = max(t.cur, inUse)
}

// peak returns the peak over the last window, or -1 while the tracker has not
// yet watched the pool for a whole window: the surplus is what stayed unused
// for MaxIdleTime, which cannot be known sooner.
func (t *peakTracker) peak(now, window time.Duration) int {
	if !t.sampled || now-t.since < window {
		return -1
	}
	return max(t.cur, t.prev)
}

// notePeak records that live objects reached n (called when a connect
// succeeds: the pool only grows through connects), for the maintainer's
// next sample.
func (p *Pool[T]) notePeak(n int64) {
	for {
		h := p.peakHint.Load()
		if n <= h || p.peakHint.CompareAndSwap(h, n) {
			return
		}
	}
}

// maintain is the pool's one maintainer goroutine: it advances the coarse
// clock every tick, keeps MinIdle warm, and every reapEvery ticks (or when
// poked by Reset or SetMaxSize) closes expired and surplus idle objects
// wherever they sit. It exits when Close cancels the pool's context.
func (p *Pool[T]) maintain() {
	defer p.goExit()
	tk := time.NewTicker(p.tick)
	defer tk.Stop()
	var peak peakTracker
	timed := p.cfg.MaxIdleTime > 0 || p.cfg.MaxLifetime > 0
	p.warm()
	for ticks := 1; ; ticks++ {
		poked := false
		select {
		case <-p.ctx.Done():
			return
		case <-tk.C:
		case <-p.kick:
			poked = true
		}
		now := time.Duration(p.publishClock().ns)
		if p.maxIdle > 0 {
			inUse := int(p.kept()) - p.idleLen() + int(p.state.Load()&waiterMask)
			inUse = max(inUse, int(p.peakHint.Swap(0)))
			peak.sample(now, inUse, p.cfg.MaxIdleTime)
		}
		if poked || (timed && ticks%reapEvery == 0) {
			p.reap(peak.peak(now, p.cfg.MaxIdleTime))
		}
		p.warm()
	}
}

// reap claims every idle object, closes those past their lifetime or idle
// time or made before a Reset, closes the surplus (above MaxSize after a
// shrink; above the peak of use over the last MaxIdleTime plus MinIdle when
// MaxIdleTime is set and the pool has been watched that long — peak < 0
// means not yet — least recently used first) and gives the rest back. No
// lock is held while the Manager runs.
func (p *Pool[T]) reap(peak int) {
	var idle []*entry[T]
	p.claimIdle(func(e *entry[T]) { idle = append(idle, e) })

	kept := idle[:0]
	for _, e := range idle {
		if r := p.expired(e, true); r != 0 {
			p.discard(e, r)
		} else {
			kept = append(kept, e)
		}
	}
	clear(idle[len(kept):])
	// What the pool keeps, read after the expired ones above were queued
	// for closing: objects already on their way out are no surplus.
	live := int(p.kept())
	over := live - int(p.maxSize.Load())
	surplus := max(over, 0)
	if p.maxIdle > 0 && peak >= 0 {
		surplus = max(surplus, live-(peak+p.cfg.MinIdle))
	}
	if surplus > 0 {
		slices.SortFunc(kept, func(a, b *entry[T]) int {
			return cmp.Compare(a.lastUsed, b.lastUsed)
		})
		n := min(surplus, len(kept))
		for i, e := range kept[:n] {
			r := reasonIdle
			if i < over {
				r = reasonShrink
			}
			p.discard(e, r)
		}
		kept = kept[n:]
	}
	for _, e := range kept {
		p.giveBack(e)
	}
}

// warm starts background connects while fewer than MinIdle objects are idle
// (within MaxSize and MaxConnecting), unless connects are backing off.
func (p *Pool[T]) warm() {
	if p.cfg.MinIdle == 0 || p.backingOff() || p.state.Load()&closedBit != 0 {
		return
	}
	connecting := int(p.connecting.Load())
	need := min(p.cfg.MinIdle-p.idleLen()-connecting, p.cfg.MaxConnecting-connecting)
	for ; need > 0 && p.reserve(); need-- {
		p.startDial(nil)
	}
}
