package pool

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolkit/poolkit/exchange"
	"github.com/poolkit/poolkit/internal/cacheline"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/shard"
)

// ReleaseChecker may be implemented by a Manager to check an object when it
// is released: an error closes the object instead of pooling it (for example,
// a connection released in the middle of a transaction). CheckRelease runs on
// the releasing goroutine, under no lock of the pool's.
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
	local    *shard.Stealable[entry[T]]
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
	// live counts idle + leased + connecting objects; a slot is reserved by
	// CAS in reserve before a connect, so live ≤ maxSize outside a shrink.
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

	// spillMu guards spill: objects for which neither the local stack nor the
	// exchange had room (a ring reporting full transiently, ExchangeNone on a
	// P whose stack is full). spillN mirrors len(spill) for lock-free peeks.
	spillMu sync.Mutex
	spill   []*entry[T]
	spillN  atomic.Int64

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

// entry is one object's record. value is immutable; gen is atomic; the
// other fields are owned by whoever holds the object (a lease holder, or the
// goroutine that took it from a stack, the exchange or the spill), and a
// publication (Push/Park/Unlock/channel send) orders them between owners.
type entry[T any] struct {
	// gen is bumped by CompareAndSwap when a lease ends, so that any copy of
	// an ended lease is detected.
	gen      atomic.Uint64
	p        *Pool[T]
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
		return nil, &configError{msg: "pool: New: nil Manager"}
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
		local:   shard.NewStealable[entry[T]](cfg.LocalDepth),
		sem:     make(chan struct{}, cfg.MaxConnecting),
		kick:    make(chan struct{}, 1),
		doneCh:  make(chan struct{}),
	}
	p.relCheck, _ = m.(ReleaseChecker[T])
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
	gen uint64
}

const staleMsg = "pool: lease used after Release, Destroy or Detach"

// Value returns the leased object. It panics if the lease has ended.
func (l Lease[T]) Value() T {
	if l.e == nil {
		panic("pool: zero Lease")
	}
	if l.e.gen.Load() != l.gen {
		panic(staleMsg)
	}
	return l.e.value
}

// end ends the lease: exactly one of concurrent enders wins; the others, and
// later calls, panic.
func (l Lease[T]) end() {
	if l.e == nil {
		panic("pool: zero Lease")
	}
	if !l.e.gen.CompareAndSwap(l.gen, l.gen+1) {
		panic(staleMsg)
	}
}

// Release returns the object to the pool. The object must not be used
// afterwards. It is closed instead if it fails the expiry checks or the
// manager's ReleaseChecker, or if the pool is closed or over its MaxSize.
func (l Lease[T]) Release() {
	l.end()
	l.e.p.put(l.e)
}

// Destroy closes the object (on a closer goroutine) instead of returning it,
// freeing its slot for the oldest waiter.
func (l Lease[T]) Destroy() {
	l.end()
	l.e.p.discard(l.e, reasonDestroy)
}

// Detach removes the object from the pool and returns it: the caller now
// owns it (and must close it). Its slot is freed for the oldest waiter.
func (l Lease[T]) Detach() T {
	l.end()
	p := l.e.p
	p.counters.detached.Add(1)
	p.freeSlot()
	return l.e.value
}

// Acquire returns a lease on an object: an idle one if there is one (this
// P's stack, then the exchange, then other Ps' stacks), else a new one if the
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
		if e := p.local.Pop(); e != nil {
			if p.usable(ctx, e) == 0 {
				return Lease[T]{e, e.gen.Load()}, nil
			}
			p.counters.shardMiss.Add(1)
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
				if src == srcExchange || src == srcSpill {
					p.counters.acqSlow.Add(1)
				}
				return Lease[T]{e, e.gen.Load()}, nil
			}
			if src == srcShard {
				p.counters.shardMiss.Add(1)
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

// Sources of an idle object, for the counters.
const (
	srcShard = iota + 1
	srcExchange
	srcSpill
)

// take removes an idle object, unchecked: this P's stack, the exchange,
// other Ps' stacks, the spill.
func (p *Pool[T]) take() (*entry[T], int) {
	if e := p.local.Pop(); e != nil {
		return e, srcShard
	}
	if e, ok := p.xch.Load().x.Unpark(); ok {
		p.counters.xhits.Add(1)
		return e, srcExchange
	}
	if e := p.local.Steal(); e != nil {
		return e, srcShard
	}
	if p.spillN.Load() > 0 {
		p.spillMu.Lock()
		var e *entry[T]
		if n := len(p.spill); n > 0 {
			e = p.spill[n-1]
			p.spill[n-1] = nil
			p.spill = p.spill[:n-1]
			p.spillN.Store(int64(n - 1))
		}
		p.spillMu.Unlock()
		if e != nil {
			p.counters.spillHits.Add(1)
			return e, srcSpill
		}
	}
	return nil, 0
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

// put is Release after the lease has ended: checks, then the oldest waiter,
// then this P's stack, the exchange, the spill.
func (p *Pool[T]) put(e *entry[T]) {
	if p.relCheck != nil && p.relCheck.CheckRelease(e.value) != nil {
		p.discard(e, reasonReleaseCheck)
		return
	}
	if tk := p.clock.Load(); e.lastUsed != tk.ns {
		// Only when the clock has moved: within one tick the entry already
		// holds this time (and rewriting it would make the next hand-out's
		// copy of e.m wait on the store buffer).
		e.lastUsed, e.m.LastUsed = tk.ns, tk.at
	}
	if r := p.expired(e, false); r != 0 {
		p.discard(e, r)
		return
	}
	if p.state.Load() != 0 {
		p.putSlow(e)
		return
	}
	if !p.local.Push(e) {
		p.publishShared(e)
	}
	// The lost-wake-up protocol, releaser's side: publish, then look for
	// waiters (see wait).
	if p.state.Load() != 0 {
		p.afterPublish()
	}
}

// putSlow is put when the pool is closed, shrinking or has waiters.
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

// overSize reports whether live exceeds maxSize, clearing shrinkingBit once
// it does not.
func (p *Pool[T]) overSize() bool {
	if p.live.Load() > p.maxSize.Load() {
		return true
	}
	p.mu.Lock()
	if p.live.Load() <= p.maxSize.Load() {
		p.state.And(^shrinkingBit)
	}
	p.mu.Unlock()
	return false
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

// publish makes e idle: this P's stack, the exchange, else the spill.
func (p *Pool[T]) publish(e *entry[T]) {
	if !p.local.Push(e) {
		p.publishShared(e)
	}
}

// publishShared parks e in the exchange, else the spill. If SetMaxSize
// swapped the exchange while e was being parked in the old one, the old one
// is emptied into the new one (see growExchange).
func (p *Pool[T]) publishShared(e *entry[T]) {
	b := p.xch.Load()
	if b.x.Park(e) {
		if p.xch.Load() != b {
			p.moveFrom(b)
		}
		return
	}
	p.spillMu.Lock()
	p.spill = append(p.spill, e)
	p.spillN.Store(int64(len(p.spill)))
	p.spillMu.Unlock()
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

// discard closes an object the caller owns, for reason r, and frees its slot
// once it is closed.
//
// The slot stays taken until Manager.Close has returned (the closer frees
// it), so that the server never sees more than MaxSize connections: a waiter
// does not dial a replacement while the old connection is still open.
func (p *Pool[T]) discard(e *entry[T], r int) {
	p.enqueueClose(e.value, r)
}

// drainIdle closes every idle object (Close, or a put that raced with it).
func (p *Pool[T]) drainIdle(r int) {
	p.local.Drain(func(e *entry[T]) { p.discard(e, r) })
	for {
		e, ok := p.xch.Load().x.Unpark()
		if !ok {
			break
		}
		p.discard(e, r)
	}
	p.spillMu.Lock()
	sp := p.spill
	p.spill = nil
	p.spillN.Store(0)
	p.spillMu.Unlock()
	for _, e := range sp {
		p.discard(e, r)
	}
}

// newEntry records a freshly connected object. Its lifetime jitter is drawn
// here, once.
// epoch is the Reset epoch when its connect started: a Reset during the
// connect makes the new object stale at its first check.
func (p *Pool[T]) newEntry(v T, epoch uint64) *entry[T] {
	d := p.now()
	now := int64(d)
	at := p.start.Add(d)
	e := &entry[T]{p: p, value: v, created: now, lastUsed: now, epoch: epoch,
		m: manager.Metrics{Created: at, LastUsed: at}}
	p.notePeak(p.live.Load())
	if lt := p.cfg.MaxLifetime; lt > 0 {
		if j := p.cfg.LifetimeJitter; j > 0 {
			lt -= time.Duration(rand.Int64N(int64(j)))
		}
		e.deadline = now + int64(lt)
	}
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
	var moved *xbox[T]
	if b := p.xch.Load(); p.cfg.Exchange != ExchangeNone && b.x.Cap() < n+1 {
		p.xch.Store(&xbox[T]{newExchange[T](p.cfg.Exchange, n)})
		moved = b
	}
	p.mu.Unlock()
	if moved != nil {
		p.moveFrom(moved)
	}
	if int64(n) < old {
		p.poke()
	} else {
		p.dispatch()
	}
}

// moveFrom empties a replaced exchange into the current idle set. A parker
// that parked into it after this pass sees the swap and calls moveFrom too.
func (p *Pool[T]) moveFrom(b *xbox[T]) {
	for {
		e, ok := b.x.Unpark()
		if !ok {
			return
		}
		p.giveBack(e)
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
