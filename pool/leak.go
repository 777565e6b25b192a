package pool

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// leakDepth is the number of stack frames a leak report keeps.
const leakDepth = 32

// leakRec is one lease's record, with LeakThreshold set: made by the Acquire
// that took the lease and immutable after (but reported). A record outlives
// its lease until the next Acquire of the object replaces it; the
// maintainer tells a current record by gen, the lease's generation, which
// the entry's state equals only while that lease holds it (states never
// repeat).
type leakRec struct {
	gen      uint64
	id       uint64
	since    time.Duration // p.now() when the Acquire obtained the lease
	ctx      context.Context
	pcs      [leakDepth]uintptr
	n        int
	reported atomic.Bool
}

// trackLease records l, just obtained (at since) by an Acquire, for leak
// detection: its caller's stack (that of the Acquire's caller) and the time.
func (p *Pool[T]) trackLease(ctx context.Context, l Lease[T], since time.Duration) {
	r := &leakRec{gen: l.gen, id: l.e.m.ID, since: since, ctx: ctx}
	// Skip runtime.Callers and the pool's frames: trackLease,
	// acquireTracked, acquireHooked and Acquire (or TryAcquire).
	r.n = runtime.Callers(5, r.pcs[:])
	l.e.leak.Store(r)
}

// findLeaks reports, once each, the leases held longer than LeakThreshold.
// The maintainer calls it every tick; it reads every live entry's record
// and state (no claim: the objects are leased).
func (p *Pool[T]) findLeaks() {
	now := p.now()
	limit := p.cfg.LeakThreshold
	p.reg.each(func(e *entry[T]) {
		r := e.leak.Load()
		if r == nil || now-r.since < limit || r.reported.Load() || e.state.Load() != r.gen {
			return
		}
		if !r.reported.CompareAndSwap(false, true) {
			return
		}
		p.counters.leaks.Add(1)
		if obs := p.cfg.Observer; obs != nil {
			p.observeLeak(obs, r, now)
		}
	})
}

// stack formats the recorded stack, one "function file:line" a line.
func (r *leakRec) stack() string {
	var b strings.Builder
	frames := runtime.CallersFrames(r.pcs[:r.n])
	for {
		f, more := frames.Next()
		if f.Function != "" {
			b.WriteString(f.Function)
			b.WriteString("\n\t")
			b.WriteString(f.File)
			b.WriteByte(':')
			b.WriteString(strconv.Itoa(f.Line))
			b.WriteByte('\n')
		}
		if !more {
			return b.String()
		}
	}
}

// observeLeak tells obs of the leak r, found at now. The maintainer's
// goroutine: a panic in Leak is dropped (see Observer).
func (p *Pool[T]) observeLeak(obs Observer, r *leakRec, now time.Duration) {
	defer dropPanic()
	obs.Leak(r.ctx, LeakEvent{ID: r.id, Held: now - r.since, Stack: r.stack()})
}
