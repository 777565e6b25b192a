package bytepool

import (
	"runtime"
	"sync/atomic"
	"time"
	"weak"
)

// GC-driven trimming.
//
// No goroutine is started. Instead a small sentinel object is allocated with
// a runtime cleanup (runtime.AddCleanup) attached and dropped at once: the
// cleanup runs, on the runtime's cleanup goroutine, after the next GC cycle
// finds the sentinel unreachable. The cleanup looks at the pool (a "tick"),
// then arms a fresh sentinel for the following cycle. The cleanup holds only
// a weak pointer to the Pool, so an unreachable Pool ends the chain.
//
// At each tick, for each class and for each of its two tiers (the per-P
// stacks and the exchange), the tick compares the tier's hit count with the
// previous tick's. A tier that served no Get during IdleCycles consecutive
// ticks and for at least cycleIdleFloor, or has served none for IdleTimeout
// (as seen at a tick), is released:
// the per-P tiers are drained as Trim drains them, the exchange is drained.
// Without GC cycles nothing is trimmed. With the GC on, the runtime forces a
// cycle at least every two minutes, which bounds the delay; with GOGC=off no
// cycle runs unless the memory limit or runtime.GC asks for one, so idle
// trimming never runs, and retention stays at most the budget (see Trim).

// cycleIdleFloor is the least time a tier must have gone without a hit
// before the cycle rule releases it. Without it, a program that allocates
// fast enough to run several GC cycles within one burst of work would see its
// pool emptied between two bursts; and ticks run late on a busy machine (the
// cleanup goroutine is scheduled like any other), so counting cycles alone
// can mistake a tier filled a moment ago for one unused for cycles. A
// variable (in nanoseconds, atomic: ticks read it on the cleanup goroutine)
// so that tests can lower it.
var cycleIdleFloor = func() *atomic.Int64 {
	var v atomic.Int64
	v.Store(int64(time.Second))
	return &v
}()

// sentinel is the object whose collection marks a GC cycle. It holds a
// pointer so that it is never batched in a tiny-allocator block with other
// objects (which would delay or prevent its cleanup).
type sentinel struct {
	_ *int
	_ [8]byte
}

func armTrim(p *Pool) { arm(weak.Make(p)) }

func arm(w weak.Pointer[Pool]) {
	runtime.AddCleanup(new(sentinel), tick, w)
}

// tick runs once per GC cycle for as long as the Pool is reachable.
func tick(w weak.Pointer[Pool]) {
	p := w.Value()
	if p == nil {
		return
	}
	p.gcTick(time.Now())
	p = nil
	arm(w)
}

// gcTick applies the idle rules to every class.
func (p *Pool) gcTick(now time.Time) {
	p.trimMu.Lock()
	defer p.trimMu.Unlock()
	for i := range p.classes {
		cl, st := &p.classes[i], &p.trim[i]
		p.retireReplaced(cl)
		// A steal is use of the per-P tiers as much as a hit is.
		ls := cl.localStats()
		if used := ls.Hits + ls.Steals; used != st.localSeen {
			st.localSeen, st.localIdle, st.localUsed = used, 0, now
		} else {
			st.localIdle++
		}
		if eh := cl.exchangeHits(); eh != st.exSeen {
			st.exSeen, st.exIdle, st.exUsed = eh, 0, now
		} else {
			st.exIdle++
		}
		if cl.reserved > 0 && p.idle(st.localIdle, st.localUsed, now) {
			p.resize(i, 0, 0) // gives its capacity back to the budget
		}
		if p.idle(st.exIdle, st.exUsed, now) && cl.ex.Len() > 0 {
			p.drainExchange(i)
		}
	}
	p.rotateReady(false)
	p.unfull() // budget the idle rules freed, and a new chance to reclaim
	p.ticks.Add(1)
}

func (p *Pool) idle(cycles int, used, now time.Time) bool {
	unused := now.Sub(used)
	return (p.cfg.IdleCycles > 0 && cycles >= p.cfg.IdleCycles && unused >= time.Duration(cycleIdleFloor.Load())) ||
		(p.cfg.IdleTimeout > 0 && unused >= p.cfg.IdleTimeout)
}
