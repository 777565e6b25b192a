package bytepool

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/poolkit/poolkit/internal/shard"
)

// The budget follows demand.
//
// New reserves, out of Config.MaxRetained, only the classes' exchanges (a
// quarter of the budget at most, see split); the per-P tiers of every class
// start empty, with no capacity. A Put that finds its class full (its P's
// stack and spill and the exchange) grows the class's per-P capacity one
// step, if the budget has room: the stack depth doubles from 1 up to
// Config.Depth, then the spill from Depth (rounded down to a power of two)
// up to Config.Spill. Each step replaces the class's shard.Local by a larger
// one (resize), so a class reaches a capacity of c buffers per P in about
// log2(c) + 3 steps, all within the first burst that needs them: the buffers
// a burst's Puts would have dropped stay, and the next burst allocates
// nothing.
//
// The capacity is given back when demand moves or idles: a class whose
// per-P tiers the idle rules release (see Config.IdleCycles) returns to no
// capacity, and a class that wants to grow when the budget is spent takes
// the capacity of classes that served no Get since the last GC tick.
//
// Capacity is counted per P ((depth + spill) × GOMAXPROCS × size), as the
// tiers are: a Put can fill only its own P's spill, but every P's may be
// full at once. So a burst on one P can keep at most about MaxRetained /
// GOMAXPROCS bytes of one class in its per-P tiers.
// See docs/decisions/0005-bytepool.md, section 3.

// grow is putSlow's first resort for b, a buffer of class cl that found its
// P's tiers full: it grows the class's per-P capacity one step if the budget
// allows (taking it from classes unused since the last tick if it must) and
// files b in the new tiers. It reports whether b was filed. It runs
// unpinned; if another goroutine holds trimMu (a Trim, a tick, another
// growth), it gives up at once rather than wait on the Put path. A class
// that cannot grow (at its top step, or the budget spent) says so in
// cl.full, so that its Puts go on to the exchange at the cost of one load,
// until a tick or a class giving capacity back clears it.
func (p *Pool) grow(cl *class, b []byte) bool {
	if cl.full.Load() || !p.trimMu.TryLock() {
		return false
	}
	defer p.trimMu.Unlock()
	ptr := unsafe.Pointer(unsafe.SliceData(b))
	if cl.push(ptr) {
		return true // another goroutine grew it first
	}
	i := p.classIndex(cl.size)
	depth, spill, ok := p.nextStep(cl)
	if !ok {
		cl.full.Store(true)
		return false
	}
	need := p.capacityBytes(cl, depth, spill) - cl.reserved
	if p.reserved+need > p.cfg.MaxRetained {
		p.reclaim(i, p.reserved+need-p.cfg.MaxRetained)
		if p.reserved+need > p.cfg.MaxRetained {
			cl.full.Store(true)
			return false
		}
	}
	p.resize(i, depth, spill)
	return cl.push(ptr)
}

// nextStep returns the class's per-P capacity one growth step up: the stack
// depth doubles up to Config.Depth, then the spill doubles from Depth
// (rounded down to a power of two) up to Config.Spill. ok is false at the
// top. Called with trimMu held.
func (p *Pool) nextStep(cl *class) (depth, spill int, ok bool) {
	maxSpill := floorPow2(p.cfg.Spill)
	switch {
	case cl.depth < p.cfg.Depth:
		return min(max(2*cl.depth, 1), p.cfg.Depth), 0, true
	case cl.spill < maxSpill:
		return cl.depth, min(max(2*cl.spill, floorPow2(p.cfg.Depth)), maxSpill), true
	}
	return 0, 0, false
}

// capacityBytes is what per-P tiers of the given depth and spill reserve:
// every P's stack and spill full.
func (p *Pool) capacityBytes(cl *class, depth, spill int) int64 {
	return int64((depth+spill)*p.procsNow()) * int64(cl.size)
}

// reclaim gives up to want bytes of budget back by taking the per-P tiers
// of classes other than keep that served no Get since the last GC tick,
// largest classes first. Called with trimMu held.
func (p *Pool) reclaim(keep int, want int64) {
	for j := len(p.classes) - 1; j >= 0 && want > 0; j-- {
		cl := &p.classes[j]
		if j == keep || cl.reserved == 0 {
			continue
		}
		if ls := cl.localStats(); ls.Hits+ls.Steals != p.trim[j].localSeen {
			continue // in use since the last tick
		}
		want -= cl.reserved
		p.resize(j, 0, 0)
	}
}

// maxPending is the most replaced tier sets a class keeps waiting for GC
// ticks (see resize): one more, and they are released at once, after a
// stop-the-world (settleReplaced). It bounds what the pool holds beyond
// what Stats counts as retained whatever the GC does: with GOGC=off no tick
// ever comes, and two classes taking the budget from each other in turn
// would otherwise pile replaced sets up without end.
const maxPending = 2

// resize replaces class i's per-P tiers by ones of the given depth and
// spill (none if depth is 0), and moves into them what the old ones hold
// that the calling goroutine can reach: its P's stack and every spill
// (parked in the exchange, or released, if the new tiers are full).
//
// What stays in the old tiers (the other Ps' stacks, which only their
// owners can pop) waits in cl.replaced until no goroutine can still be
// using them: every Get and Put loads a class's tiers while pinned to its P
// (Get, Put, class.push, class.pop), and a stop-the-world that starts after
// the switch waits for every pinned section to end. A GC cycle is one: two
// ticks after the switch (the second cycle surely started after it),
// retireReplaced releases them. A class with more than maxPending sets
// waiting does not wait for the GC: settleReplaced stops the world itself.
// Releasing them at once instead would miss a Put that loaded them just
// before the switch and files its buffer after the release. Called with
// trimMu held, unpinned.
//
// The stop-the-world covers pinned sections only, so no buffer is lost only
// if nothing uses tiers it loaded after the pinned section that loaded them
// has ended. Where that section found no stack for its P (Local.Stack
// returned nil), class.push and class.pop go on unpinned (pushUnpinned,
// popUnpinned): in the default build (GOMAXPROCS grew) they grow the
// table and start again pinned, loading the tiers afresh; in the
// synchronised builds, where nothing is pinned and the stop-the-world
// waits for nobody, Local.Push and Local.Pop go through each stack's guard,
// which the release (shard.Local.DrainAll) takes for good, so a Push that
// comes after it keeps nothing, reports false, and its caller files the
// buffer elsewhere.
func (p *Pool) resize(i, depth, spill int) {
	p.classes[i].resizes++
	p.replaceTiers(i, depth, spill, true)
	if cl := &p.classes[i]; len(cl.replaced) > maxPending {
		waitPinned()
		p.settleReplaced(cl, false)
	}
}

// replaceTiers is resize without the count and the bound: Trim uses it to
// take a class's stacks out of use, keeping its room. With move false the
// old tiers keep everything, for the caller to release (Trim).
func (p *Pool) replaceTiers(i, depth, spill int, move bool) {
	cl := &p.classes[i]
	old := cl.local.Load()
	var l *tiers
	var reserved int64
	if depth > 0 {
		l = shard.NewLocalSpill(depth, spill, cl.drop)
		reserved = int64((depth+spill)*l.Procs()) * int64(cl.size)
	}
	if reserved < cl.reserved {
		p.unfull() // budget given back: any class may try to grow again
	}
	p.reserved += reserved - cl.reserved
	cl.reserved, cl.depth, cl.spill = reserved, depth, spill
	cl.local.Store(l)
	if !p.zeroOnPut && !debugTracking { // else every Get and Put takes the long way
		p.hot[p.minIndex+i].setTiers(hotLocal(l))
		if i == 0 {
			for _, a := range p.minAliases() {
				p.hot[a].setTiers(hotLocal(l))
			}
		}
	}
	if old == nil {
		return
	}
	r := replaced{l: old, tick: p.ticks.Load()}
	r.hits, r.steals = cl.drainedHits.Swap(0), cl.drainedSteals.Swap(0)
	if move {
		p.move(cl, &r, l)
	}
	cl.replaced = append(cl.replaced, r)
}

// replaced is a class's per-P tiers that resize replaced, until
// retireReplaced retires them. Guarded by Pool.trimMu.
type replaced struct {
	l    *tiers
	tick uint64 // Pool.ticks when they were replaced
	// hits and steals are the pops of l that were drains, not Gets (see
	// class.countDrains).
	hits, steals uint64
}

// move pops what r's tiers hold that the calling goroutine can reach and
// files it in to (nil: nowhere), or, if to is full, in the exchange, or
// releases it. Called with trimMu held.
func (p *Pool) move(cl *class, r *replaced, to *tiers) {
	before := r.l.Stats()
	var moved uint64
	for {
		ptr, ok := r.l.Pop()
		if !ok {
			break
		}
		moved++
		if to == nil || !to.Push(ptr) {
			if !cl.ex.Park(unsafe.Slice((*byte)(ptr), cl.size)) {
				cl.drop(ptr)
			}
		}
	}
	if moved > 0 {
		steals := min(r.l.Stats().Steals-before.Steals, moved)
		r.steals += steals
		r.hits += moved - steals
	}
}

// retireReplaced releases, at a GC tick, the class's replaced tiers that no
// goroutine can still be using (see resize): two ticks old, a GC cycle's
// stop-the-world has come between. From the others it drains what the
// calling goroutine can reach into the current tiers. Called with trimMu
// held.
func (p *Pool) retireReplaced(cl *class) {
	keep := cl.replaced[:0]
	for _, r := range cl.replaced {
		if p.ticks.Load() < r.tick+2 {
			p.move(cl, &r, cl.local.Load())
			keep = append(keep, r)
			continue
		}
		p.release(cl, r, cl.local.Load())
	}
	clear(cl.replaced[len(keep):])
	cl.replaced = keep
}

// settleReplaced releases every replaced tier set of the class, which no
// goroutine can be using any more: the caller has just stopped the world
// (waitPinned). Their buffers go to the current tiers, else the exchange,
// else back to the allocator; with drop set (Trim), straight back to the
// allocator. Called with trimMu held.
func (p *Pool) settleReplaced(cl *class, drop bool) {
	to := cl.local.Load()
	if drop {
		to = nil
	}
	for _, r := range cl.replaced {
		p.release(cl, r, to)
	}
	clear(cl.replaced)
	cl.replaced = cl.replaced[:0]
}

// release empties r, a replaced tier set no goroutine can be using any more,
// into to (nil: nowhere), else the exchange (unless to is nil), else the
// allocator, and adds the Gets it served to the class's past. Every P's
// stack and spill is reachable now (shard.Local.DrainAll), and r's tiers
// keep nothing afterwards: DrainAll seals them against a straggler of the
// synchronised builds (see resize).
func (p *Pool) release(cl *class, r replaced, to *tiers) {
	r.l.DrainAll(func(ptr unsafe.Pointer) {
		switch {
		case to != nil && to.Push(ptr):
		case to != nil && cl.ex.Park(unsafe.Slice((*byte)(ptr), cl.size)):
		default:
			cl.drop(ptr)
		}
	})
	s := r.l.Stats()
	cl.pastHits.Add(s.Hits - min(s.Hits, r.hits))
	cl.pastSteals.Add(s.Steals - min(s.Steals, r.steals))
}

// waitPinned returns once every pinned section that was running when it was
// called has ended: runtime.ReadMemStats stops the world, and a
// stop-the-world waits for every pinned goroutine to unpin — the property
// of the runtime that resize relies on for GC cycles (see shard.Local.Retire).
// A few microseconds; off the fast paths only, when replaced tiers must be
// released without waiting for the GC.
func waitPinned() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
}

// push files ptr on the calling P's stack or spill of class cl, loading the
// class's tiers while pinned (see resize); it reports false if they are
// full or the class has none.
func (cl *class) push(ptr unsafe.Pointer) bool {
	pid := shard.Enter()
	l := cl.local.Load()
	if l == nil {
		shard.Exit()
		return false
	}
	s := l.Stack(pid)
	ok := s.Push(ptr) || l.PushSpill(s, ptr)
	shard.Exit()
	if s == nil {
		return cl.pushUnpinned(l, pid, ptr)
	}
	return ok
}

// pushUnpinned is push where the pinned section found no stack for P pid in
// l, the tiers it loaded. push no longer holds the pin that a release of
// replaced tiers waits out (see resize), so l may be replaced and released
// meanwhile; a buffer filed in l after that would be lost, kept by tiers
// nobody drains again. So, in the default build (GOMAXPROCS grew: pid is
// beyond l's stacks), pushUnpinned grows l's table and starts push again,
// which loads the tiers afresh, pinned; if l has been released, Grow says
// so and pushUnpinned reports false, for the caller to file ptr elsewhere.
// In the synchronised builds (pid is -1) nothing is pinned and Local.Push
// does it all: it takes each stack's guard, which the release takes for
// good (shard.Local.DrainAll), so a Push on released tiers keeps nothing
// and reports false.
func (cl *class) pushUnpinned(l *tiers, pid int, ptr unsafe.Pointer) bool {
	if h := unpinnedHook.Load(); h != nil {
		(*h)()
	}
	if pid < 0 {
		return l.Push(ptr)
	}
	return l.Grow(pid) && cl.push(ptr)
}

// unpinnedHook, if set (by tests, see export_test.go), runs where
// pushUnpinned starts: where a release of the tiers push loaded can come
// between their load and their use. One load, off the fast path.
var unpinnedHook atomic.Pointer[func()]

// pop is Local.Pop on class cl's tiers, loaded while pinned (see push).
func (cl *class) pop() (unsafe.Pointer, bool) {
	pid := shard.Enter()
	l := cl.local.Load()
	if l == nil {
		shard.Exit()
		return nil, false
	}
	s := l.Stack(pid)
	ptr, ok := s.Pop()
	if !ok {
		ptr, ok = l.PopSpill(s)
	}
	shard.Exit()
	if s == nil {
		return cl.popUnpinned(l, pid)
	}
	return ptr, ok
}

// popUnpinned is pop where the pinned section found no stack for P pid in l,
// as pushUnpinned is push's. A pop from released tiers would find nothing,
// but in the default build one that pins again to pop from l could run
// alongside the release's drain and take a buffer the drain also takes: so
// pop starts again, pinned, once l's table covers pid. In the synchronised
// builds each stack's guard keeps the two apart.
func (cl *class) popUnpinned(l *tiers, pid int) (unsafe.Pointer, bool) {
	if pid < 0 {
		return l.Pop()
	}
	if !l.Grow(pid) {
		return nil, false
	}
	return cl.pop()
}

// unfull clears every class's full flag (see grow). Called with trimMu held.
func (p *Pool) unfull() {
	for i := range p.classes {
		p.classes[i].full.Store(false)
	}
}
