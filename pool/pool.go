package pool

import (
	"context"
	"math/rand/v2"
	"runtime"
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
// the releasing goroutine, under no lock of the pool's. If it panics, the
// object is closed and its slot freed, and the panic goes on to the caller of
// Release.
type ReleaseChecker[T any] interface {
	CheckRelease(obj T) error
}

// Bits of Pool.state. The low bits count queued waiters.
const (
	closedBit    = int64(1) << 62 // Close has begun
	shrinkingBit = int64(1) << 61 // live may exceed maxSize (SetMaxSize shrank it)
	// The hook bits are set by New, for good, when an option needs a slow
	// path: acqHookBit (Observer, LeakThreshold) keeps Acquire off its fast
	// path, and either bit keeps Release off its own (put's state != 0), so
	// that the fast paths pay nothing for options that are not set.
	acqHookBit = int64(1) << 60
	relHookBit = int64(1) << 59 // MaxIdle, or a manager that implements ReleaseChecker
	waiterMask = relHookBit - 1
)

// maxExchangeCap bounds the exchange's capacity: it holds hints, and an idle
// object without one is found by a registry scan, so a pool of any MaxSize
// costs New the same.
const maxExchangeCap = 1 << 10

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
	epoch atomic.Uint32
	// xch is the current exchange; replaced (grown) by SetMaxSize.
	xch atomic.Pointer[xbox[T]]
	_   cacheline.Pad
	// live counts idle + leased + connecting objects, and those queued for
	// or in Manager.Close (they keep their slots until it returns). It and
	// maxSize change only under smu (see slots.go), so live ≤ maxSize
	// outside a shrink.
	live    atomic.Int64
	maxSize atomic.Int64
	_       cacheline.Pad

	// smu guards every change to the slot counters: live, maxSize,
	// connecting, closing, and counters.created, closed and detached (see
	// slots.go). Held for a few counter updates only; it may be taken under
	// mu, never the other way round.
	smu sync.Mutex

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

	// goroutines counts the goroutines this pool started that have not
	// exited (maintainer, dialers, a closer per object being closed, health
	// check passes).
	goroutines atomic.Int64
	// connecting counts slots reserved for a connect whose Manager.Connect
	// has not returned (under smu).
	connecting atomic.Int64
	// closing counts objects on their way to, or in, Manager.Close: they
	// still hold their slots (under smu; see discard).
	closing atomic.Int64

	// Connect backoff, shared by the maintainer and TryAcquire's background
	// connects: after failures consecutive failures, no background connect
	// starts before retryAt (ns on the clock's scale).
	failures atomic.Int64
	retryAt  atomic.Int64

	// skew is added to the clock's readings; only tests change it (to make
	// time pass without waiting).
	skew atomic.Int64

	counters counters

	// Health checks (health.go): checking counts objects under a check
	// (they count as idle for MinIdle); healthRunning is set while a pass
	// runs; nextHealth (clock ns) is the maintainer's own.
	checking      atomic.Int64
	healthRunning atomic.Bool
	nextHealth    int64
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
	idx      int32  // the entry's index in reg; guarded by reg.mu
	epoch    uint32 // the pool's Reset epoch when it was made
	value    T
	lastUsed int64 // clock ns at the last release (coarse)
	deadline int64 // clock ns past which the lifetime has ended; 0: none
	// leak is the record of the Acquire that took the object, with
	// LeakThreshold set (see leak.go): written by that acquirer, read by
	// the maintainer, hence atomic.
	leak atomic.Pointer[leakRec]
	// path is how the current holder's Acquire found the object, for the
	// Observer; set on the slow paths only (a hooked pool takes no other).
	path AcquirePath
	// m is passed to Recycle as is: Created, LastUsed (the coarse clock's
	// time at the last release) and Uses (the hand-out count) are kept up to
	// date in place, so that a hand-out builds no Metrics value. With a
	// pointer-sized T it starts at offset 64 of a 128-byte entry: one cache
	// line, so that its copy into Recycle's arguments does not straddle two
	// (see TestEntryLayout and decision 0006).
	m manager.Metrics
}

// paddedEntry is how an entry is allocated: the pad keeps the next
// allocation out of the entry's last cache line. Every Acquire and Release
// writes its entry (the state, Metrics.Uses), each P its own; an entry of
// 128 bytes with a pointer-sized T fills its size class's slots exactly, but
// with a larger T (an interface, such as net.Conn, takes 136 bytes) the
// allocator packs entries so that one's last line is the next one's first,
// and two Ps using neighbouring entries took that line from each other on
// every operation, halving a pool's throughput on two Ps in most pools
// made (decision 0009; TestEntriesShareNoCacheLine). The pad is after the
// entry only: with such a T, an object of another type in the same size
// class may still end in an entry's first line.
type paddedEntry[T any] struct {
	e entry[T]
	_ cacheline.Pad
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
	p.setHooks()
	p.reg.init(min(cfg.MaxSize, 64))
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
// between claiming a slot and freeing it (see decision 0001) — up to
// maxExchangeCap: beyond that a Park may fail, and the object, idle without
// a hint, is found by a registry scan.
func newExchange[T any](k ExchangeKind, maxSize int) exchange.Exchange[*entry[T]] {
	return exchange.New[*entry[T]](k, exchangeCap(maxSize))
}

func exchangeCap(maxSize int) int { return min(maxSize, maxExchangeCap-1) + 1 }

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
//
// The fast path (no ReleaseChecker, no waiter, not closed or shrinking, the
// entry already stamped with this clock tick) ends the lease and publishes
// the object with a single compare-and-swap, and writes nothing to the
// entry before it: the loser of two concurrent Releases (a data race of the
// caller's) has then only read the entry. Every other path (put) ends the
// lease first and then works on an object it holds; the one extra
// read-modify-write that costs falls on the clock-tick case once per tick per
// object, on every release of a pool with a hook (Observer, LeakThreshold,
// MaxIdle, a ReleaseChecker), and when waiters exist. Every path ends the lease
// with one compare-and-swap, so that of two concurrent Releases of one lease
// exactly one proceeds and the other panics.
//
// About one release in 1024 of each object yields the processor
// (runtime.Gosched) once the object is back in the pool, so that goroutines
// acquiring and releasing in a loop do not keep the pool's objects from the
// goroutines that wait for a processor, each for its whole time slice
// (decision 0008).
func (l Lease[T]) Release() {
	e := l.live()
	p := e.p
	due := yieldDue(l.gen)
	if p.state.Load() != 0 || e.lastUsed != p.clock.Load().ns || p.expired(e) != 0 {
		p.put(e, l.gen)
		if due {
			runtime.Gosched()
		}
		return
	}
	// Idle from here: any claimer may take it.
	if !e.state.CompareAndSwap(l.gen, l.gen+1) {
		panic(staleMsg)
	}
	// A hint: Local.Push's steps, inlined; else the whole way (hint).
	st := p.local.Stack(shard.Enter())
	ok := st.Push(e)
	shard.Exit()
	if !ok {
		p.hint(e)
	}
	// The lost-wake-up protocol, releaser's side: publish (the
	// compare-and-swap above), then look for waiters (see block).
	if p.state.Load() != 0 {
		p.afterPublish()
	}
	if due {
		runtime.Gosched()
	}
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
	p.detached()
	return v
}

// Acquire returns a lease on an object: an idle one if there is one (found
// through this P's stack, then the exchange, then a scan of every live
// object, which reaches those idle on other Ps' stacks), else a new one if the
// pool is below MaxSize, else one released to it while it waits in FIFO
// order. Every object handed out passes the expiry checks and, if used
// before, Manager.Recycle under ctx.
//
// An Acquire whose ctx has already ended returns its error at once and hands
// out nothing; so does one whose ctx ends while it waits or connects, even
// if an object arrives at that same moment (the object goes to the next
// waiter or back to the pool). A Recycle that fails while ctx has ended is
// taken as the caller's cancellation, not the object's fault: the object
// stays in the pool. Deadlines (ctx's, or Config.AcquireTimeout, which bounds
// the whole Acquire across every retry) end it with an error matching
// ErrTimeout and context.DeadlineExceeded; a cancellation, context.Canceled;
// both keep context.Cause. A connect error is returned wrapped (a connect
// that ran past Config.ConnectTimeout matches ErrTimeout). After Close,
// Acquire returns ErrClosed, and only that. A nil ctx panics.
func (p *Pool[T]) Acquire(ctx context.Context) (Lease[T], error) {
	if ctx == nil {
		panic("pool: Acquire: nil Context")
	}
	if ctx.Err() != nil {
		return Lease[T]{}, p.ctxFail(ctx)
	}
	if p.state.Load()&(closedBit|acqHookBit|waiterMask) == 0 {
		// Local.Pop's steps, inlined: the only calls are the runtime's pin
		// and unpin. A nil stack (synchronised builds, or a P beyond the
		// table) misses here; the slow path's take pops the whole way.
		st := p.local.Stack(shard.Enter())
		e, ok := st.Pop()
		shard.Exit()
		if ok {
			if gen, ok := claim(e); ok {
				// check, by hand: no call of its own, and the guard's defer
				// is Acquire's (see check).
				r := p.expired(e)
				if r == 0 {
					if e.m.Uses == 0 {
						e.m.Uses++
						return Lease[T]{e, gen}, nil
					}
					armed := true
					defer e.closeIfPanicked(&armed, reasonRecycle)
					err := p.mgr.Recycle(ctx, e.value, e.m)
					armed = false
					if err == nil {
						e.m.Uses++
						return Lease[T]{e, gen}, nil
					}
					r = recycleFailed(ctx)
				}
				p.localFailed(ctx, e, r)
				if r == checkCanceled {
					return Lease[T]{}, p.ctxFail(ctx)
				}
			} else {
				p.counters.stale.Add(1)
			}
		}
	}
	if p.state.Load()&acqHookBit != 0 {
		return p.acquireHooked(ctx, true)
	}
	return p.acquireSlow(ctx, true)
}

// localFailed handles an object claimed through a local hint that failed
// its check r: it goes back if the caller's context ended, else it is closed.
func (p *Pool[T]) localFailed(ctx context.Context, e *entry[T], r int) {
	p.counters.localMiss.Add(1)
	if r == checkCanceled {
		p.giveBack(e)
		return
	}
	p.discard(e, r)
}

// TryAcquire is Acquire without waiting: it returns an idle object if there
// is one and nobody is waiting, else ErrExhausted at once, after starting a
// background connect if the pool is below MaxSize (and connects are not
// backing off after failures), so that a retry soon succeeds. After Close it
// returns ErrClosed; on an ended ctx, ctx's error. A nil ctx panics.
func (p *Pool[T]) TryAcquire(ctx context.Context) (Lease[T], error) {
	if ctx == nil {
		panic("pool: TryAcquire: nil Context")
	}
	if ctx.Err() != nil {
		return Lease[T]{}, p.ctxFail(ctx)
	}
	if p.state.Load()&acqHookBit != 0 {
		return p.acquireHooked(ctx, false)
	}
	return p.acquireSlow(ctx, false)
}

func (p *Pool[T]) acquireSlow(ctx context.Context, wait bool) (Lease[T], error) {
	var t acqTimer
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
			r := p.check(ctx, e)
			if r == 0 {
				if src != srcLocal {
					p.counters.acqOther.Add(1)
				}
				e.path = AcquirePath(src)
				return Lease[T]{e, e.state.Load()}, nil
			}
			if src == srcLocal {
				p.counters.localMiss.Add(1)
			}
			if r == checkCanceled {
				p.giveBack(e)
				return Lease[T]{}, p.ctxFail(ctx)
			}
			p.discard(e, r)
		}
		if !wait {
			if !p.backingOff() && p.reserve() {
				p.startDial(ctx, nil)
			}
			return Lease[T]{}, ErrExhausted
		}
		if p.reserve() {
			return p.blockTimed(ctx, &t, true)
		}
	} else if !wait {
		return Lease[T]{}, ErrExhausted
	}
	return p.blockTimed(ctx, &t, false)
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
	reasonMaxIdle
	reasonHealth
	nReasons
)

// checkCanceled is what check returns when Recycle failed while the caller's
// context had ended: the object is not at fault and goes back to the pool.
const checkCanceled = -1

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

// check decides whether an object its caller took may be handed out: the
// expiry checks, then Recycle if it was used before. On success it counts
// the use and returns 0; otherwise it returns checkCanceled (Recycle failed
// and ctx has ended: the caller keeps the object and gives it back) or the
// reason to close the object (the caller closes it).
func (p *Pool[T]) check(ctx context.Context, e *entry[T]) int {
	if r := p.expired(e); r != 0 {
		return r
	}
	if e.m.Uses != 0 {
		// Should Recycle panic (or call runtime.Goexit), the deferred call
		// closes the object and frees its slot before the panic goes on to
		// the caller: a panicking manager costs one object, not a slot for
		// good. The defer is open-coded (a flag on the stack, tested at
		// return); its cost is in DESIGN.md.
		armed := true
		defer e.closeIfPanicked(&armed, reasonRecycle)
		err := p.mgr.Recycle(ctx, e.value, e.m)
		armed = false
		if err != nil {
			return recycleFailed(ctx)
		}
	}
	e.m.Uses++
	return 0
}

// recycleFailed is what check returns when Recycle failed: checkCanceled if
// ctx has ended (the caller's cancellation, not the object's fault), else
// reasonRecycle.
func recycleFailed(ctx context.Context) int {
	if ctx.Err() != nil {
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

// releaseRefused runs the manager's ReleaseChecker on e, which the caller
// holds, and reports whether it refused the object. A panicking CheckRelease
// closes the object and frees its slot before the panic goes on.
func (p *Pool[T]) releaseRefused(e *entry[T]) bool {
	armed := true
	defer e.closeIfPanicked(&armed, reasonReleaseCheck)
	err := p.relCheck.CheckRelease(e.value)
	armed = false
	return err != nil
}

// put is Release's slow path: it ends the lease gen on e, keeping the object,
// and returns it (putHeld).
func (p *Pool[T]) put(e *entry[T], gen uint64) {
	p.endLease(e, gen)
	p.putHeld(e)
}

// endLease ends lease gen on e, keeping e held by the caller.
func (p *Pool[T]) endLease(e *entry[T], gen uint64) {
	if !e.state.CompareAndSwap(gen, gen+2) {
		panic(staleMsg)
	}
}

// putHeld is put after the lease has ended, on an object the caller holds:
// the manager's release check, the time stamp, the expiry checks, then
// giveBack.
func (p *Pool[T]) putHeld(e *entry[T]) {
	if p.cfg.LeakThreshold > 0 {
		e.leak.Store(nil) // the lease is over; its record held the acquirer's context
	}
	if p.relCheck != nil && p.releaseRefused(e) {
		p.discard(e, reasonReleaseCheck)
		return
	}
	if tk := p.clock.Load(); e.lastUsed != tk.ns {
		e.lastUsed, e.m.LastUsed = tk.ns, tk.at
	}
	if r := p.expired(e); r != 0 {
		p.discard(e, r)
		return
	}
	p.giveBack(e)
}

// giveBack returns an object the caller holds and that passed its checks (a
// released, fresh, rescued or reaped one): closed if the pool is closed or
// the object is surplus after a shrink, else to the oldest waiter, else to
// the idle set.
func (p *Pool[T]) giveBack(e *entry[T]) {
	s := p.state.Load()
	if s&closedBit != 0 {
		p.discard(e, reasonClosed)
		return
	}
	if s&shrinkingBit != 0 && p.claimSurplus() {
		p.closeClaimed(e, reasonShrink)
		return
	}
	if s&waiterMask != 0 && p.handoff(hand[T]{e: e}) {
		return
	}
	if p.cfg.MaxIdle > 0 && p.idleAtLeast(p.cfg.MaxIdle) {
		p.discard(e, reasonMaxIdle)
		return
	}
	p.publish(e)
	if p.state.Load() != 0 {
		p.afterPublish()
	}
}

// afterPublish runs after an object was published while state was non-zero:
// hand idle objects to waiters; close what a concurrent Close missed; and
// after a shrink that raced with the publish (the maintainer's pass may have
// looked before the object was idle), ask the maintainer for another pass.
func (p *Pool[T]) afterPublish() {
	s := p.state.Load()
	if s&closedBit != 0 {
		p.drainIdle(reasonClosed)
		return
	}
	if s&waiterMask != 0 {
		p.dispatch()
	}
	if s&shrinkingBit != 0 && p.kept() > p.maxSize.Load() {
		p.poke()
	}
}

// discard closes an object the caller holds, for reason r, and frees its
// slot once it is closed.
//
// The slot stays taken until Manager.Close has returned, so that the server
// never sees more than MaxSize connections: a waiter does not dial a
// replacement while the old connection is still open.
func (p *Pool[T]) discard(e *entry[T], r int) {
	p.closeStarted()
	p.closeClaimed(e, r)
}

// closeClaimed is discard for an object already counted as closing (see
// claimSurplus). Each object is closed on a goroutine of its own: after a
// mass failure every close runs at once (at most one per slot), so the pool
// is back to strength one Manager.Close later, not one per closer.
func (p *Pool[T]) closeClaimed(e *entry[T], r int) {
	v := e.value
	p.forget(e)
	p.goroutines.Add(1)
	go p.closeOne(v, r, p.noteClose(e))
}

// forget removes an entry the caller holds (and will never give back) from
// the registry, and drops its value: hints may still point at the entry
// until they are popped, but not at the object.
func (p *Pool[T]) forget(e *entry[T]) {
	p.reg.remove(e)
	e.leak.Store(nil) // a leak record holds its acquirer's context
	var zero T
	e.value = zero
}

// newEntry records a freshly connected object. Its lifetime jitter is drawn
// here, once.
// epoch is the Reset epoch when its connect started: a Reset during the
// connect makes the new object stale at its first check.
func (p *Pool[T]) newEntry(v T, epoch uint32) *entry[T] {
	d := p.now()
	now := int64(d)
	at := p.start.Add(d)
	id := p.connected()
	pe := &paddedEntry[T]{e: entry[T]{p: p, value: v, lastUsed: now, epoch: epoch,
		m: manager.Metrics{Created: at, LastUsed: at, ID: id}}}
	e := &pe.e
	e.state.Store(1) // held by its creator
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
// MaxSize objects); shrinking closes exactly the surplus — idle objects at
// the maintainer's next pass, which it triggers, the others as they are
// released — and nothing new is made until live fits.
func (p *Pool[T]) SetMaxSize(n int) {
	if n < 1 {
		panic("pool: SetMaxSize: n must be >= 1")
	}
	p.mu.Lock()
	p.smu.Lock() // a reserve sees the old maximum or the new one, whole
	old := p.maxSize.Swap(int64(n))
	p.smu.Unlock()
	if int64(n) < old {
		p.state.Or(shrinkingBit)
	}
	if b := p.xch.Load(); p.cfg.Exchange != ExchangeNone && b.x.Cap() < exchangeCap(n) {
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

// Reset makes every object created before it — including those whose connect
// is in flight — be closed: at its next acquire or release, and idle ones by
// the maintainer, at once (Reset triggers a pass) and at every tick while an
// object older than the Reset is idle.
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

// yieldEvery is how many uses of an object there are, on average, between
// two releases of it that yield the processor (a power of two): see Release
// and decision 0008.
const yieldEvery = 1 << 10

// yieldDue reports whether the release of the lease of generation gen
// yields the processor: when gen times 2⁶⁴/φ (Fibonacci hashing) falls in
// the lowest 1/yieldEvery of the 64-bit range. The generation is the
// object's state word when the lease took it; every use moves it on by two
// (a claim and a fast release, or a hand-off) or four (a release that
// publishes on the slow path), and the pool's own visits (reaping, health
// checks) by two. Along any such progression the products are spread evenly
// over the range, so about one release in yieldEvery yields, never two in a
// row, and, while the step stays the same, never more than about
// 3·yieldEvery uses apart. The generation is the lease's own copy: the
// releaser reads nothing of the entry for it, so that the loser of two
// concurrent Releases (a race of the caller's) reads nothing a new holder
// writes.
func yieldDue(gen uint64) bool { return gen*0x9E3779B97F4A7C15 < 1<<64/yieldEvery }
