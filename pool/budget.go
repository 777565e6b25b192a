package pool

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolkit/poolkit/internal/shard"
)

// The budget of a keyed pool: one count of global slots (used, against
// KeyedConfig.MaxSize) that every key's pool takes from as it takes its
// own slots, and the rule by which room moves between keys.
//
// A key's slot counts once in its pool's live count, under MaxSizePerKey,
// and once in used: reserve takes both in one step (keyMember.take, under
// the key's smu), and every transition that lowers a key's live gives the
// global slot back (keyMember.freed). So used is the keys' live counts
// summed, and neither limit is passed.
//
// Room moves only when it pays, because a connect costs what tens to
// thousands of short uses of a connection cost:
//
//   - A key that holds objects is served by its own releases first: its
//     waiters queue for them, and it takes no other key's object for
//     them. It grows (up to MaxSizePerKey) into room nobody uses: a free
//     slot, or an idle object of a key nobody waits for that has been
//     idle long enough to be surplus (surplusAge, several connects: its
//     key is unlikely to need it before a new one could be made).
//   - A key that holds nothing (starving: it has waiters and no object)
//     gets room at once if there is room nobody uses: a free slot, or the
//     least recently used surplus object of a key nobody waits for, closed
//     for it (CloseEvict); at once too from a key that holds two objects
//     or more (an idle one of a key nobody waits for, or its next
//     release). Once it has starved for bound (about one
//     connect), it takes any idle object of a key nobody waits for, or the
//     next object released. So a key whose one object is in use keeps it
//     for at least a connect's time, which pays for the connect that
//     moving it costs, and no key waits much longer than bound plus one
//     use of an object. Starving keys are served in arrival order, the one
//     with the most waiters first among the first pickWindow, and the
//     first once it has starved for bound.
//   - A key whose waiters outnumber its objects (hungry) for longer than
//     bound (about one connect) takes an idle object of a key nobody waits
//     for that has been idle at least bound (CloseEvictHot): one idle for
//     less would be wanted back before a new one could be made.
//
// The bounds follow the connects the keyed pool measures (an average of
// their durations): bound is one connect (1 ms to 1 s), surplusAge four
// (5 ms to 10 s).
//
// The budget works on keys, not waiters: a key whose waiters could use
// room is in one of three lists, in the order its need arose — starving
// (no object), hungry (more waiters than objects, under its own limit) or
// wanting (the other keys with waiters under their own limit) — and every
// decision walks at most a few keys at the head of a list. Idle objects to evict are
// looked for among a sample of keys (see Keyed.victim).
//
// Lock order: a key's mu, then its smu, then budget.mu; budget.mu is never
// held while taking a key's lock, calling a manager or sending.
type budget[K comparable, T any] struct {
	mu       sync.Mutex
	max      int64
	used     int64            // global slots held: the keys' live counts summed
	waiting  int64            // waiters of every key (the keys' waiting summed)
	starving memberList[K, T] // keys with waiters and no object
	hungry   memberList[K, T] // keys with objects and more waiters, under their own limit
	wanting  memberList[K, T] // the other keys with waiters and objects, under their own limit
	// nStarving mirrors starving.n for yield's look without the lock.
	nStarving atomic.Int64
	// connect is the average duration of the keyed pool's connects, in
	// ns (an exponentially weighted mean over the last few).
	connect atomic.Int64
	start   time.Time // the clock's origin (Keyed.start)
}

// memberList is a FIFO list of keys, linked through keyMember.
type memberList[K comparable, T any] struct {
	head, tail *keyMember[K, T]
	n          int
}

func (l *memberList[K, T]) push(m *keyMember[K, T]) {
	m.list, m.prev, m.next = l, l.tail, nil
	if l.tail != nil {
		l.tail.next = m
	} else {
		l.head = m
	}
	l.tail = m
	l.n++
}

func (l *memberList[K, T]) remove(m *keyMember[K, T]) {
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		l.head = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		l.tail = m.prev
	}
	m.list, m.prev, m.next = nil, nil, nil
	l.n--
}

// Tunables of the rule (see budget).
const (
	// pickWindow is how many starving keys, from the head, a pick looks
	// at for the one with the most waiters.
	pickWindow = 8
	// walkLimit bounds the keys a pass of the maintainer serves from the
	// head of each list.
	walkLimit = 8
)

// now is the clock's reading for the lists (ns since the keyed pool's
// start). Slow paths only.
func (b *budget[K, T]) now() int64 { return int64(time.Since(b.start)) }

// bound is how long a hungry key waits before it may take an idle object
// that is not surplus, and the least idle time of such a victim: one
// connect, within [1ms, 1s].
func (b *budget[K, T]) bound() int64 {
	return min(max(b.connect.Load(), int64(time.Millisecond)), int64(time.Second))
}

// surplusAge is the idle time past which an object counts as surplus: four
// connects, within [5ms, 10s].
func (b *budget[K, T]) surplusAge() int64 {
	return min(max(4*b.connect.Load(), int64(5*time.Millisecond)), int64(10*time.Second))
}

// connected folds a connect's duration into the average.
func (b *budget[K, T]) connected(d time.Duration) {
	for {
		old := b.connect.Load()
		n := int64(d)
		if old != 0 {
			n = old + (int64(d)-old)/8
		}
		if b.connect.CompareAndSwap(old, n) {
			return
		}
	}
}

// place puts m in the list its state calls for, given its live count —
// starving (waiters, no object), hungry (more waiters than objects, under
// its own limit), wanting (waiters and objects, under its own limit) or
// none — and keeps when it joined it (since). Called with mu held after any
// change to m's waiting or live (the changes of live each call it: take,
// freed, granted), so that the last placement sees the last change.
func (b *budget[K, T]) place(m *keyMember[K, T], live int64) {
	var l *memberList[K, T]
	switch under := live < m.p.maxSize.Load(); {
	case m.waiting > 0 && live == 0:
		l = &b.starving
	case m.waiting > live && under:
		l = &b.hungry
	case m.waiting > 0 && under:
		l = &b.wanting
	}
	if l == m.list {
		return
	}
	if m.list != nil {
		m.list.remove(m)
	}
	if l != nil {
		l.push(m)
		m.since = b.now()
	}
	b.nStarving.Store(int64(b.starving.n))
}

// need is how many more objects m could use from other keys: its waiters,
// within its own limit, less the room on its way (a key's waiters take its
// idle objects first: dispatch asks for room only when there are none).
// Called with mu held.
func (b *budget[K, T]) need(m *keyMember[K, T]) int64 {
	return min(m.waiting, m.p.maxSize.Load()-m.p.live.Load()) - m.coming
}

// hungryFor reports whether m has had more waiters than objects for bound
// at least (now, on the list's clock). Called with mu held.
func (b *budget[K, T]) hungryFor(m *keyMember[K, T], now int64) bool {
	return m.list == &b.hungry && now-m.since >= b.bound()
}

// pick returns the starving key room goes to next, or nil: among the
// first pickWindow with no room coming (an eviction roomFor still tries
// does not count) and not in skip, the one with the
// most waiters (the earliest among equals), unless the first has starved
// for bound already. Called with mu held.
func (b *budget[K, T]) pick(skip ...*keyMember[K, T]) *keyMember[K, T] {
	var best *keyMember[K, T]
	now := int64(-1)
	i := 0
	for m := b.starving.head; m != nil && i < pickWindow; m = m.next {
		i++
		if m.coming > m.trying || slices.Contains(skip, m) {
			continue
		}
		if best == nil {
			if now < 0 {
				now = b.now()
			}
			if now-m.since >= b.bound() {
				return m // it has starved long enough: first come, first served
			}
		}
		if best == nil || m.waiting > best.waiting {
			best = m
		}
	}
	return best
}

// target returns the key a freed slot goes to: to, the key an eviction
// was for, if it still needs room; else the starving key pick chooses;
// else the first hungry key, then the first wanting key, with a need; nil
// if none (the slot is free).
// tried are keys that could not use it this time. Called with mu held.
func (b *budget[K, T]) target(to *keyMember[K, T], tried []*keyMember[K, T]) *keyMember[K, T] {
	if to != nil && !slices.Contains(tried, to) && b.wants(to) {
		return to
	}
	if m := b.pick(tried...); m != nil {
		return m
	}
	for _, l := range [...]*memberList[K, T]{&b.hungry, &b.wanting} {
		i := 0
		for m := l.head; m != nil && i < walkLimit; m = m.next {
			i++
			if !slices.Contains(tried, m) && b.need(m) > 0 {
				return m
			}
		}
	}
	return nil
}

// wants reports whether m can use a slot now: starving with nothing
// coming, or hungry or wanting with a need. Called with mu held.
func (b *budget[K, T]) wants(m *keyMember[K, T]) bool {
	switch m.list {
	case &b.starving:
		return m.coming == 0
	case &b.hungry, &b.wanting:
		return b.need(m) > 0
	}
	return false
}

// give hands a global slot, counted in used and on its way, to the key
// target chooses, retrying with another when one cannot use it, and
// gives it back to the budget when nobody can. to is the key an eviction
// was for (nil: none). Called with mu held; returns with it released.
func (b *budget[K, T]) give(to *keyMember[K, T]) {
	var tried [4]*keyMember[K, T]
	n := 0
	for {
		t := b.target(to, tried[:n])
		if t == nil || n == len(tried) {
			b.used--
			checkSlotCounts(b.used, 0, 0)
			break
		}
		t.coming++
		b.mu.Unlock()
		ok := t.p.granted()
		b.mu.Lock()
		t.coming--
		b.place(t, t.p.live.Load())
		if ok {
			break
		}
		tried[n] = t
		n++
	}
	b.mu.Unlock()
	// granted raised their live for a moment, and coming kept them: a key
	// that could not use the slot may be empty now (see Keyed.drop).
	for _, t := range tried[:n] {
		t.dropIfEmpty()
	}
}

// pump hands free room to the key target chooses while there is both: a
// reserve that take refused for another key's need leaves the room to that
// key, whose own look may have come and gone.
func (b *budget[K, T]) pump() {
	for range walkLimit {
		b.mu.Lock()
		if b.used >= b.max || b.target(nil, nil) == nil {
			b.mu.Unlock()
			return
		}
		b.used++
		b.give(nil)
	}
}

// figures is the budget's part of a timeout's message.
func (b *budget[K, T]) figures() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("all keys: live=%d of MaxSize=%d waiting=%d, %d keys with no object waited for, %d wanting more",
		b.used, b.max, b.waiting, b.starving.n, b.hungry.n+b.wanting.n)
}

// keyMember is one key's pool of a Keyed and what the budget knows of it:
// it is the pool's room (see room.go).
type keyMember[K comparable, T any] struct {
	p   *Pool[T]
	k   *Keyed[K, T]
	key K
	idx int // its place in Keyed.members; guarded by Keyed.mu

	// calls counts the Acquires blocking and the Warms running in p: a
	// key is not dropped while one runs (a connect that fails with nobody
	// queued leaves p empty while its Acquire retries).
	calls atomic.Int64
	// poked asks the keyed pool's maintainer for a pass of p.
	poked atomic.Bool
	// scans counts the objects found by a scan (see hintsAfter).
	scans atomic.Int64

	// Guarded by budget.mu.
	waiting int64 // waiters queued in p that take a slot (see waiter.objOnly)
	coming  int64 // room on its way to p: evictions for it, slots handed to it
	// trying counts the evictions for p that roomFor is still trying,
	// counted in coming too: pick does not pass a key over for room that
	// may not come (a victim another path claims first).
	trying     int64
	since      int64 // when it joined its list (budget.now)
	list       *memberList[K, T]
	prev, next *keyMember[K, T]
}

func (m *keyMember[K, T]) take(p *Pool[T]) bool {
	b := &m.k.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used >= b.max {
		return false
	}
	// Free room goes to a starving key first.
	if s := b.pick(); s != nil && s != m {
		return false
	}
	b.used++
	b.place(m, p.live.Load()+1) // reserve raises live as take returns
	return true
}

func (m *keyMember[K, T]) refused(*Pool[T]) { m.k.b.pump() }

func (m *keyMember[K, T]) freed(p *Pool[T], to *Pool[T]) {
	b := &m.k.b
	var tm *keyMember[K, T]
	if to != nil {
		tm = to.rm.(*keyMember[K, T])
	}
	b.mu.Lock()
	b.place(m, p.live.Load())
	if tm != nil {
		tm.coming--
		b.place(tm, tm.p.live.Load())
	}
	b.give(tm)
	m.dropIfEmpty()
	if tm != nil {
		tm.dropIfEmpty() // the caller the room came for may have gone
	}
}

// want, unwant and resumed count p's waiters, and among them those that
// take a slot: a waiter backing off after a failed connect (objOnly) takes
// released objects only, so room handed to its key would find nobody to
// connect with it, and its key asks for none while all its waiters back
// off. Called under p's mu, which guards objOnly's writes.
func (m *keyMember[K, T]) want(w *waiter[T]) {
	m.count(1, !w.objOnly.Load())
}

func (m *keyMember[K, T]) unwant(w *waiter[T]) {
	m.count(-1, !w.objOnly.Load())
}

func (m *keyMember[K, T]) resumed(*waiter[T]) {
	b := &m.k.b
	b.mu.Lock()
	m.waiting++
	b.place(m, m.p.live.Load())
	b.mu.Unlock()
}

// count adds delta to the budget's waiters, and to m's if they take a
// slot.
func (m *keyMember[K, T]) count(delta int64, slot bool) {
	b := &m.k.b
	b.mu.Lock()
	b.waiting += delta
	if slot {
		m.waiting += delta
	}
	b.place(m, m.p.live.Load())
	b.mu.Unlock()
}

// makeRoom: p's waiters need room at the global cap. A starving key gets
// the least recently used idle object of another key; a hungry one a
// surplus one, or, past bound, one idle for bound; else the maintainer
// looks again (see Keyed.tendRoom).
func (m *keyMember[K, T]) makeRoom(*Pool[T]) {
	if !m.k.roomFor(m) {
		m.k.kickMaintainer()
	}
}

// tryRoom: a TryAcquire or Warm of p refused at the global cap, under its
// own limit. A key that holds nothing has the least recently used idle
// object of a key nobody waits for closed, so that its retry finds room; a
// key that holds objects, a surplus one only.
func (m *keyMember[K, T]) tryRoom(p *Pool[T]) {
	live := p.live.Load()
	if live >= p.maxSize.Load() {
		return // room it could not use
	}
	b := &m.k.b
	minIdle, reason := int64(0), reasonEvict
	if live > 0 {
		minIdle, reason = b.surplusAge(), reasonEvictSurplus
	}
	b.mu.Lock()
	// coming keeps m's state while the close runs (see Keyed.drop), so
	// that a retry sees the close under way and starts no other.
	ok := m.coming == 0 && b.used >= b.max && p.state.Load()&closedBit == 0
	if ok {
		m.coming++
	}
	b.mu.Unlock()
	if ok && !m.k.evictFor(m, minIdle, reason) {
		b.mu.Lock()
		m.coming--
		b.mu.Unlock()
	}
}

// yield: an object p holds goes to a starving key instead of to p's
// waiters or idle set when p can spare it (it holds two objects or more),
// or, when it is p's one object, once the starving key has starved for
// bound: the connect that moving it costs is then paid for by at least as
// long a use of it where it is.
func (m *keyMember[K, T]) yield(p *Pool[T]) (*Pool[T], int) {
	b := &m.k.b
	if b.nStarving.Load() == 0 {
		return nil, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.pick(m)
	if s == nil {
		return nil, 0
	}
	if p.live.Load() < 2 && b.now()-s.since < b.bound() {
		return nil, 0 // p's one object stays p's until s has starved for bound
	}
	s.coming++
	return s.p, reasonEvict
}

func (m *keyMember[K, T]) busy(_ *Pool[T], delta int64) { m.calls.Add(delta) }

func (m *keyMember[K, T]) goroutine(delta int) { m.k.goroutine(delta) }

func (m *keyMember[K, T]) connected(d time.Duration) { m.k.b.connected(d) }

// hintsAfter is how many objects a key's Acquires find by a scan of its
// registry before its pool gets per-P stacks and an exchange of its own.
// Until then it shares the keyed pool's empty ones (see shared), so that a
// key used now and then costs no memory per P; a key in steady use gets
// the single pool's hot path.
const hintsAfter = 16

func (m *keyMember[K, T]) scanned(p *Pool[T]) {
	sh := m.k.sh
	if p.local.Load() != sh.local || m.scans.Add(1) != hintsAfter {
		return
	}
	p.mu.Lock() // drop closes the pool under mu: no hints for a dropped key
	if p.state.Load()&closedBit == 0 && p.local.Load() == sh.local {
		p.local.Store(shard.NewLocal[*entry[T]](p.cfg.localDepth, nil))
		p.xch.Store(&xbox[T]{newExchange[T](p.cfg.Exchange, p.cfg.MaxSize)})
	}
	p.mu.Unlock()
}

func (m *keyMember[K, T]) poke(*Pool[T]) bool {
	if !m.poked.Swap(true) {
		m.k.pokes.Add(1)
	}
	m.k.kickMaintainer()
	return true
}

func (m *keyMember[K, T]) describe() string { return m.k.b.figures() }

// empty reports whether p has no object, no waiter and no call running:
// its state can go, unless room is on its way to it (coming, which drop
// looks at under the budget's mu).
func (m *keyMember[K, T]) empty() bool {
	p := m.p
	return p.live.Load() == 0 && p.state.Load()&(waiterMask|closedBit) == 0 && m.calls.Load() == 0
}

// dropIfEmpty drops the key's state if it is empty (see Keyed.drop).
func (m *keyMember[K, T]) dropIfEmpty() {
	if m.empty() {
		m.k.drop(m)
	}
}

// granted takes a global slot the budget hands p (it counts in used
// already) and gives it to p's oldest slot-taking waiter, who connects with
// it. It reports false, keeping nothing, if p cannot use it: its key is at
// its limit, it is closed, or nobody takes a slot any more.
func (p *Pool[T]) granted() bool {
	p.smu.Lock()
	ok := p.live.Load() < p.maxSize.Load()
	if ok {
		p.live.Add(1)
		p.connecting.Add(1)
	}
	p.smu.Unlock()
	if !ok {
		return false
	}
	// As in reserve: raise live, then look at the closed bit.
	if p.state.Load()&closedBit == 0 && p.handoff(hand[T]{slot: true}) {
		return true
	}
	p.smu.Lock()
	p.connecting.Add(-1)
	p.live.Add(-1)
	p.checkSlots()
	p.smu.Unlock()
	if p.state.Load()&closedBit != 0 {
		p.checkDone()
	}
	return false
}
