package pool

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolkit/poolkit/exchange"
	"github.com/poolkit/poolkit/internal/cacheline"
	"github.com/poolkit/poolkit/internal/configerr"
	"github.com/poolkit/poolkit/internal/shard"
	"github.com/poolkit/poolkit/manager"
)

// ReleaseChecker may be implemented by a Manager to check an object when it
// is released: an error closes the object instead of pooling it (for example,
// a connection released in the middle of a transaction). CheckRelease runs on
// the releasing goroutine, under no lock of the pool's. Like
// Manager.Recycle, it must not panic: the object of a panicking CheckRelease
// keeps its slot for good.
type ReleaseChecker[T any] interface {
	CheckRelease(obj T) error
}

// Bits of Pool.state. The low bits count queued waiters.
const (
	closedBit    = int64(1) << 62 // Close has begun
	shrinkingBit = int64(1) << 61 // live may exceed maxSize (SetMaxSize shrank it)
	waiterMask   = shrinkingBit - 1
)

// closers bounds the goroutines that run Manager.Close.
const closers = 4

// Pool is a typed pool of costly objects made, checked and destroyed by a
// Manager. All methods are safe for concurrent use. A Release synchronizes
// before the Acquire that returns the same object.
//
// A Pool must be closed with Close to stop its goroutines.
type Pool[T any] struct {
	// Read-only after New.
	mgr      manager.Manager[T]
	relCheck ReleaseChecker[T] // mgr, if it implements ReleaseChecker
	cfg      Config
	expiry   bool  // MaxLifetime, MaxIdleTime or MaxUses is set
	maxIdle  int64 // cfg.MaxIdleTime in ns
	maxUses  uint64
	start    time.Time // monotonic origin of the clock
	tick     time.Duration
	// local holds hints: pointers to objects that were idle when pushed.
	// A hint is claimed (see claim) before use, and a stale one is dropped.
	local    *shard.Local[*entry[T]]
	ctx      context.Context // cancelled by Close: connects and the maintainer
	cancel   context.CancelCauseFunc
	sem      chan struct{} // bounds concurrent Manager.Connect calls
	kick     chan struct{} // asks the maintainer for an early pass (1-buffered)
	doneCh   chan struct{} // closed once closed, nothing live, no goroutine
	doneOnce sync.Once

	_ cacheline.Pad
	// Read on every Acquire and Release; written rarely (waiters queue,
	// SetMaxSize shrink, Close). See the bit constants.
	state atomic.Int64
	// clock is the coarse clock: the latest tick, published by the
	// maintainer every tick. Read on the hot path (a plain load); a release
	// copies its ns and time.Time into the entry, so that a hand-out does no
	// time arithmetic.
	clock atomic.Pointer[tick]
	// epoch counts Resets; objects stamped with an older epoch are closed.
	epoch atomic.Uint64
	// xch is the current exchange; replaced (grown) by SetMaxSize.
	xch atomic.Pointer[xbox[T]]
	_   cacheline.Pad
	// live counts idle + leased + connecting objects, and those queued for
	// or in Manager.Close (they keep their slots until it returns); a slot
	// is reserved by CAS in reserve before a connect, so live ≤ maxSize
	// outside a shrink.
	live    atomic.Int64
	maxSize atomic.Int64
	_       cacheline.Pad

	// mu guards the waiter queue (and its count in state), the clearing of
	// shrinkingBit and xch swaps. Never held while calling the Manager,
	// blocking, or sending on a channel that could block.
	mu    sync.Mutex
	queue waitQueue[T]
	// waiters recycles *waiter[T] values (see getWaiter).
	waiters sync.Pool

	// reg is every live object's entry: the authoritative idle set is the
	// registered entries whose state is even (see idle.go).
	reg registry[T]

	// cmu guards closeq and nclosers.
	cmu      sync.Mutex
	closeq   []closeReq[T]
	nclosers int

	// goroutines counts the goroutines this pool started that have not
	// exited (maintainer, dialers, closers).
	goroutines atomic.Int64
	// connecting counts Manager.Connect calls started and not finished.
	connecting atomic.Int64
	// closing counts objects queued for, or in, Manager.Close: they still
	// hold their slots (see discard).
	closing atomic.Int64
	// peakHint is the largest live count seen by a connect since the
	// maintainer last looked (see notePeak): the ticks alone can miss the
	// short leases that made the pool grow.
	peakHint atomic.Int64

	// Connect backoff, shared by the maintainer and TryAcquire's background
	// connects: after failures consecutive failures, no background connect
	// starts before retryAt (ns on the clock's scale).
	failures atomic.Int64
	retryAt  atomic.Int64

	// skew is added to the clock's readings; only tests change it (to make
	// time pass without waiting).
	skew atomic.Int64

	counters counters
}

// now returns the precise time on the clock's scale (ns since start). Slow
// paths only: it reads the monotonic clock.
func (p *Pool[T]) now() time.Duration {
	return time.Since(p.start) + time.Duration(p.skew.Load())
}

// tick is one reading of the coarse clock: ns since the pool's start, and
// the same instant as a time.Time. Immutable once published.
type tick struct {
	ns int64
	at time.Time
}

// publishClock stores a new tick for the current time and returns it.
func (p *Pool[T]) publishClock() *tick {
	now := p.now()
	t := &tick{ns: int64(now), at: p.start.Add(now)}
	p.clock.Store(t)
	return t
}

// xbox holds one exchange so that it can be swapped atomically.
type xbox[T any] struct{ x exchange.Exchange[*entry[T]] }

// entry is one object's record. state is atomic; the other fields are owned
// by whoever holds the object (a lease holder, or the pool goroutine that
// claimed it), and the state transitions order them between holders: a
// holder's writes happen before the release (an atomic add or
// compare-and-swap on state) that the next holder's claim reads.
type entry[T any] struct {
	// state is odd while the object is held (leased, or taken by the pool
	// to check, hand off or close it) and even while it is idle. Every
	// transition adds one, by compare-and-swap from a value read, so a held
	// state is never seen twice: a lease's generation is the state it was
	// taken at, and any copy of an ended lease finds another value.
	state    atomic.Uint64
	p        *Pool[T]
	idx      int // the entry's index in reg; guarded by reg.mu
	value    T
	created  int64  // clock ns when Connect returned
	lastUsed int64  // clock ns at the last release (coarse)
	deadline int64  // clock ns past which the lifetime has ended; 0: none
	epoch    uint64 // the pool's Reset epoch when it was made
	// m is passed to Recycle as is: Created, LastUsed (the coarse clock's
	// time at the last release) and Uses (the hand-out count) are kept up to
	// date in place, so that a hand-out builds no Metrics value.
	m manager.Metrics
}

// New returns a pool of objects made by m. It returns an error matching
// ErrInvalidConfig, naming the field, if cfg is invalid. New starts one
// maintainer goroutine; Close stops it.
func New[T any](m manager.Manager[T], cfg Config) (*Pool[T], error) {
	if m == nil {
		return nil, configerr.New(ErrInvalidConfig, "pool: New: nil Manager")
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	p := &Pool[T]{
		mgr:     m,
		cfg:     cfg,
		expiry:  cfg.MaxLifetime > 0 || cfg.MaxIdleTime > 0 || cfg.MaxUses > 0,
		maxIdle: int64(cfg.MaxIdleTime),
		maxUses: uint64(cfg.MaxUses),
		start:   time.Now(),
		tick:    tickFor(cfg),
		local:   shard.NewLocal[*entry[T]](cfg.LocalDepth, nil),
		sem:     make(chan struct{}, cfg.MaxConnecting),
		kick:    make(chan struct{}, 1),
		doneCh:  make(chan struct{}),
	}
	p.relCheck, _ = m.(ReleaseChecker[T])
	p.reg.init(cfg.MaxSize)
	p.clock.Store(&tick{at: p.start})
	p.ctx, p.cancel = context.WithCancelCause(context.Background())
	p.maxSize.Store(int64(cfg.MaxSize))
	p.xch.Store(&xbox[T]{newExchange[T](cfg.Exchange, cfg.MaxSize)})
	p.goroutines.Add(1)
	go p.maintain()
	return p, nil
}

// newExchange returns an exchange for a pool of maxSize objects. It holds one
// more than maxSize, so that even with every object parked one slot is free:
// a Ring then never reports full, not even transiently while a consumer is
// between claiming a slot and freeing it (see decision 0001).
func newExchange[T any](k ExchangeKind, maxSize int) exchange.Exchange[*entry[T]] {
	return exchange.New[*entry[T]](k, maxSize+1)
}

// Lease is the right to use one object until Release, Destroy or Detach. It
// is a small value (the object's record and a generation) and may be copied;
// all copies are the same lease. Once the lease has ended, every method on it
// or on any copy panics with a "pool: " message, even after the object has
// gone to another holder. The zero Lease panics too.
type Lease[T any] struct {
	e   *entry[T]
	gen uint64 // the entry's state while this lease holds it (odd)
}

const staleMsg = "pool: lease used after Release, Destroy or Detach"

// live returns the lease's entry, or panics if the lease is zero or ended.
// (A lease ended concurrently on another goroutine is caught by the
// compare-and-swap that ends it: see end.)
func (l Lease[T]) live() *entry[T] {
	if l.e == nil {
		panic("pool: zero Lease")
	}
	if l.e.state.Load() != l.gen {
		panic(staleMsg)
	}
	return l.e
}

// end ends the lease, keeping the object held by the caller (under a state
// no lease has): exactly one of concurrent enders wins; the others panic.
func (l Lease[T]) end() *entry[T] {
	e := l.live()
	if !e.state.CompareAndSwap(l.gen, l.gen+2) {
		panic(staleMsg)
	}
	return e
}

// Value returns the leased object. It panics if the lease has ended.
func (l Lease[T]) Value() T {
	return l.live().value
}

// Release returns the object to the pool. The object must not be used
// afterwards. It is closed instead if it fails the expiry checks or the
// manager's ReleaseChecker, or if the pool is closed or over its MaxSize.
func (l Lease[T]) Release() {
	e := l.live()
	e.p.put(e, l.gen)
}

// Destroy closes the object (on a closer goroutine) instead of returning it,
// freeing its slot for the oldest waiter.
func (l Lease[T]) Destroy() {
	e := l.end()
	e.p.discard(e, reasonDestroy)
}

// Detach removes the object from the pool and returns it: the caller now
// owns it (and must close it). Its slot is freed for the oldest waiter.
func (l Lease[T]) Detach() T {
	e := l.end()
	p := e.p
	v := e.value
	p.forget(e)
	p.counters.detached.Add(1)
	p.freeSlot()
	return v
}

// Acquire returns a lease on an object: an idle one if there is one (found
// through this P's stack, then the exchange, then a scan of every live
// object, which reaches those idle on other Ps' stacks), else a new one if the
// pool is below MaxSize, else one released to it while it waits in FIFO
// order. Every object handed out passes the expiry checks and, if used
// before, Manager.Recycle under ctx.
//
// ctx is consulted only when Acquire connects or waits: an idle object is
// handed out without looking at it (except through Recycle). A wait or
// connect ended by a deadline (ctx's or Config.AcquireTimeout) returns an
// error matching ErrTimeout and context.DeadlineExceeded; a cancellation,
// context.Canceled; both keep context.Cause. A connect error is returned
// wrapped. After Close, Acquire returns ErrClosed.
func (p *Pool[T]) Acquire(ctx context.Context) (Lease[T], error) {
	if p.state.Load()&(closedBit|waiterMask) == 0 {
		if e, ok := p.local.Pop(); ok {
			if gen, ok := claim(e); ok {
				// usable, by hand: one call fewer.
				r := p.check(ctx, e)
				if r == 0 {
					return Lease[T]{e, gen}, nil
				}
				p.discard(e, r)
				p.counters.localMiss.Add(1)
			} else {
				p.counters.stale.Add(1)
			}
		}
	}
	return p.acquireSlow(ctx, true)
}

// TryAcquire is Acquire without waiting: it returns an idle object if there
// is one and nobody is waiting, else ErrExhausted at once, after starting a
// background connect if the pool is below MaxSize (and connects are not
// backing off after failures), so that a retry soon succeeds. After Close it
// returns ErrClosed.
func (p *Pool[T]) TryAcquire(ctx context.Context) (Lease[T], error) {
	return p.acquireSlow(ctx, false)
}

func (p *Pool[T]) acquireSlow(ctx context.Context, wait bool) (Lease[T], error) {
	s := p.state.Load()
	if s&closedBit != 0 {
		return Lease[T]{}, ErrClosed
	}
	if s&waiterMask == 0 {
		for {
			e, src := p.take()
			if e == nil {
				break
			}
			if p.usable(ctx, e) == 0 {
				if src != srcLocal {
					p.counters.acqOther.Add(1)
				}
				return Lease[T]{e, e.state.Load()}, nil
			}
			if src == srcLocal {
				p.counters.localMiss.Add(1)
			}
		}
		if !wait {
			if !p.backingOff() && p.reserve() {
				p.startDial(nil)
			}
			return Lease[T]{}, ErrExhausted
		}
		if p.reserve() {
			var t acqTimer
			defer t.stop()
			return p.connectFor(ctx, &t)
		}
	} else if !wait {
		return Lease[T]{}, ErrExhausted
	}
	return p.wait(ctx)
}

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
	nReasons
)

// expired runs the expiry checks (Reset epoch, lifetime, idle time, uses) on
// an object its caller owns, against the coarse clock. It returns 0 or the
// reason to close it.
func (p *Pool[T]) expired(e *entry[T], idle bool) int {
	if e.epoch != p.epoch.Load() {
		return reasonReset
	}
	if p.expiry {
		now := p.clock.Load().ns
		switch {
		case e.deadline != 0 && now >= e.deadline:
			return reasonLifetime
		case idle && p.maxIdle != 0 && now-e.lastUsed >= p.maxIdle:
			return reasonIdle
		case p.maxUses != 0 && e.m.Uses >= p.maxUses:
			return reasonUses
		}
	}
	return 0
}

// usable decides whether an object its caller took may be handed out: the
// expiry checks, then Recycle if it was used before. On success it counts
// the use and returns 0; otherwise it closes the object (freeing its slot)
// and returns the reason.
func (p *Pool[T]) usable(ctx context.Context, e *entry[T]) int {
	r := p.check(ctx, e)
	if r != 0 {
		p.discard(e, r)
	}
	return r
}

// check is usable without the discard.
func (p *Pool[T]) check(ctx context.Context, e *entry[T]) int {
	if r := p.expired(e, true); r != 0 {
		return r
	}
	if e.m.Uses != 0 {
		if p.mgr.Recycle(ctx, e.value, e.m) != nil {
			return reasonRecycle
		}
	}
	e.m.Uses++
	return 0
}

// put is Release of the lease gen on e, which the caller checked is current:
// checks, then the oldest waiter, else idle (with a hint on this P's stack,
// else in the exchange). Every path ends the lease with one
// compare-and-swap, so that of two concurrent Releases of one lease exactly
// one proceeds and the other panics.
//
// The fast path (no ReleaseChecker, no waiter, not closed or shrinking, the
// entry already stamped with this clock tick) ends the lease and publishes
// the object with that single compare-and-swap, and writes nothing to the
// entry before it: the loser of two concurrent Releases (a data race of the
// caller's) has then only read the entry. Every other path ends the lease
// first and then works on an object it holds (putHeld); the one extra
// read-modify-write that costs falls on the clock-tick case once per tick per
// object, and on managers with a ReleaseChecker.
func (p *Pool[T]) put(e *entry[T], gen uint64) {
	if p.relCheck != nil || p.state.Load() != 0 || e.lastUsed != p.clock.Load().ns {
		p.endLease(e, gen)
		p.putHeld(e)
		return
	}
	if r := p.expired(e, false); r != 0 {
		p.endLease(e, gen)
		p.discard(e, r)
		return
	}
	// Idle from here: any claimer may take it.
	if !e.state.CompareAndSwap(gen, gen+1) {
		panic(staleMsg)
	}
	if !p.local.Push(e) { // hint, by hand: the compiler does not inline it here
		p.xch.Load().x.Park(e)
	}
	// The lost-wake-up protocol, releaser's side: publish (the
	// compare-and-swap above), then look for waiters (see wait).
	if p.state.Load() != 0 {
		p.afterPublish()
	}
}

// endLease ends lease gen on e, keeping e held by the caller.
func (p *Pool[T]) endLease(e *entry[T], gen uint64) {
	if !e.state.CompareAndSwap(gen, gen+2) {
		panic(staleMsg)
	}
}

// putHeld is put after the lease has ended, on an object the caller holds:
// the manager's release check, the time stamp, the expiry checks, then
// putSlow.
func (p *Pool[T]) putHeld(e *entry[T]) {
	if p.relCheck != nil && p.relCheck.CheckRelease(e.value) != nil {
		p.discard(e, reasonReleaseCheck)
		return
	}
	if tk := p.clock.Load(); e.lastUsed != tk.ns {
		e.lastUsed, e.m.LastUsed = tk.ns, tk.at
	}
	if r := p.expired(e, false); r != 0 {
		p.discard(e, r)
		return
	}
	p.putSlow(e)
}

// putSlow returns a held object that passed its release checks: closed, or
// over MaxSize after a shrink, it is closed; else giveBack.
func (p *Pool[T]) putSlow(e *entry[T]) {
	s := p.state.Load()
	if s&closedBit != 0 {
		p.discard(e, reasonClosed)
		return
	}
	if s&shrinkingBit != 0 && p.overSize() {
		p.discard(e, reasonShrink)
		return
	}
	p.giveBack(e)
}

// overSize reports whether the objects the pool keeps exceed maxSize,
// clearing shrinkingBit once they do not.
func (p *Pool[T]) overSize() bool {
	if p.kept() > p.maxSize.Load() {
		return true
	}
	p.mu.Lock()
	if p.kept() <= p.maxSize.Load() {
		p.state.And(^shrinkingBit)
	}
	p.mu.Unlock()
	return false
}

// kept is the number of live objects not on their way out: live minus those
// queued for, or in, Manager.Close (which keep their slots until it returns,
// but are no surplus to close again). Two loads, so approximate while closes
// finish.
func (p *Pool[T]) kept() int64 {
	return p.live.Load() - p.closing.Load()
}

// giveBack returns an object that passed its release checks (or a fresh or
// rescued one) to the oldest waiter, else to the idle set.
func (p *Pool[T]) giveBack(e *entry[T]) {
	s := p.state.Load()
	if s&closedBit != 0 {
		p.discard(e, reasonClosed)
		return
	}
	if s&waiterMask != 0 && p.handoff(hand[T]{e: e}) {
		return
	}
	p.publish(e)
	if p.state.Load() != 0 {
		p.afterPublish()
	}
}

// afterPublish runs after an object was published while state was non-zero:
// hand idle objects to waiters; close what a concurrent Close missed.
func (p *Pool[T]) afterPublish() {
	s := p.state.Load()
	if s&closedBit != 0 {
		p.drainIdle(reasonClosed)
		return
	}
	if s&waiterMask != 0 {
		p.dispatch()
	}
}

// reserve takes a slot under maxSize for a connect. It refuses once the pool
// is closed: it raises live, then looks at the closed bit, while Close sets
// the bit, then looks at live (checkDone); both are sequentially consistent,
// so either reserve sees the bit and gives the slot back, or Close sees the
// slot and waits for it. No connect starts after Close has returned.
func (p *Pool[T]) reserve() bool {
	for {
		n := p.live.Load()
		if n >= p.maxSize.Load() || p.state.Load()&closedBit != 0 {
			return false
		}
		if p.live.CompareAndSwap(n, n+1) {
			break
		}
	}
	if p.state.Load()&closedBit != 0 {
		p.freeSlot()
		return false
	}
	return true
}

// freeSlot gives up a slot (an object closed or detached, a failed connect)
// and offers the room to the oldest waiter as a connect on its behalf.
func (p *Pool[T]) freeSlot() {
	p.live.Add(-1)
	s := p.state.Load()
	if s&closedBit != 0 {
		p.checkDone()
		return
	}
	if s&waiterMask != 0 {
		p.dispatch()
	}
}

// discard closes an object the caller holds, for reason r, and frees its
// slot once it is closed.
//
// The slot stays taken until Manager.Close has returned (the closer frees
// it), so that the server never sees more than MaxSize connections: a waiter
// does not dial a replacement while the old connection is still open.
func (p *Pool[T]) discard(e *entry[T], r int) {
	v := e.value
	p.forget(e)
	p.enqueueClose(v, r)
}

// forget removes an entry the caller holds (and will never give back) from
// the registry, and drops its value: hints may still point at the entry
// until they are popped, but not at the object.
func (p *Pool[T]) forget(e *entry[T]) {
	p.reg.remove(e)
	var zero T
	e.value = zero
}

// newEntry records a freshly connected object. Its lifetime jitter is drawn
// here, once.
// epoch is the Reset epoch when its connect started: a Reset during the
// connect makes the new object stale at its first check.
func (p *Pool[T]) newEntry(v T, epoch uint64) *entry[T] {
	d := p.now()
	now := int64(d)
	at := p.start.Add(d)
	id := p.counters.created.Add(1)
	e := &entry[T]{p: p, value: v, created: now, lastUsed: now, epoch: epoch,
		m: manager.Metrics{Created: at, LastUsed: at, ID: id}}
	e.state.Store(1) // held by its creator
	p.notePeak(p.live.Load())
	if lt := p.cfg.MaxLifetime; lt > 0 {
		if j := p.cfg.LifetimeJitter; j > 0 {
			lt -= time.Duration(rand.Int64N(int64(j)))
		}
		e.deadline = now + int64(lt)
	}
	p.reg.add(e)
	return e
}

// SetMaxSize changes MaxSize (n ≥ 1; it panics otherwise). Growing lets
// waiters connect at once (and grows the exchange so that it still holds
// MaxSize objects); shrinking closes the surplus as it is released or found
// idle, and nothing new is made until live fits.
func (p *Pool[T]) SetMaxSize(n int) {
	if n < 1 {
		panic("pool: SetMaxSize: n must be >= 1")
	}
	p.mu.Lock()
	old := p.maxSize.Swap(int64(n))
	if int64(n) < old {
		p.state.Or(shrinkingBit)
	}
	if b := p.xch.Load(); p.cfg.Exchange != ExchangeNone && b.x.Cap() < n+1 {
		// The old exchange holds hints only: dropping them loses nothing
		// (the objects stay idle in the registry).
		p.xch.Store(&xbox[T]{newExchange[T](p.cfg.Exchange, n)})
	}
	p.mu.Unlock()
	if int64(n) < old {
		p.poke()
	} else {
		p.dispatch()
	}
}

// Reset makes every object created before it be closed at its next touch:
// acquire, release, or the maintainer's next pass (which it triggers).
func (p *Pool[T]) Reset() {
	p.epoch.Add(1)
	p.poke()
}

// poke asks the maintainer for an early pass.
func (p *Pool[T]) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}
