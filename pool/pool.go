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

// Pool is a typed pool of costly objects made, checked and destroyed by a
// Manager. All methods are safe for concurrent use. A Release synchronizes
// before the Acquire that returns the same object.
//
// A Pool must be closed with Close to stop its goroutines.
type Pool[T any] struct {
	// Read on every Acquire and Release, on one cache line with the
	// read-only fields the fast paths read. state is written rarely
	// (waiters queue, SetMaxSize shrink, Close: see the bit constants).
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
	// local holds hints: pointers to objects that were idle when pushed.
	// A hint is claimed (see claim) before use, and a stale one is dropped.
	// A key's pool of a Keyed starts with an empty one that holds nothing
	// and gets its own once it is in steady use (see keyMember.scanned).
	local    atomic.Pointer[shard.Local[*entry[T]]]
	rec      recycler[T] // the manager's Recycle (see recycler)
	recycles bool        // the manager has a Recycle to call (it does not skip it: skipsRecycle)
	expiry   bool        // MaxLifetime, MaxIdleTime or MaxUses is set
	maxIdle  int64       // cfg.MaxIdleTime in ns
	maxUses  uint64

	// Read-only after New.
	mgr      manager.Manager[T]
	relCheck manager.ReleaseChecker[T] // mgr, if it implements ReleaseChecker
	cfg      *Config                   // a key's pools of a Keyed share one
	start    time.Time                 // monotonic origin of the clock
	tick     time.Duration
	ctx      context.Context // cancelled by Close: connects and the maintainer
	cancel   context.CancelCauseFunc
	sem      chan struct{} // bounds concurrent Manager.Connect calls; nil in a key's pool whose connects MaxSize bounds already
	kick     chan struct{} // asks the maintainer for an early pass (1-buffered); nil in a key's pool
	doneOnce sync.Once
	// rm is where room comes from beyond MaxSize: nothing (solo) for a
	// pool of its own, the keyed pool's budget for one key's pool (see
	// room.go). Set before the pool runs, never changed.
	rm room[T]
	// waiters recycles *waiter[T] values (see getWaiter); a key's pools
	// of a Keyed share one.
	waiters *sync.Pool

	// Written on slow paths only, from the second cache line on (see
	// TestPoolHotFieldsShareOneLine): the fields above fill the first
	// cacheline.Size bytes of the Pool, which the allocator aligns to it.
	// live counts idle + leased + connecting objects, and those queued for
	// or in Manager.Close (they keep their slots until it returns). It and
	// maxSize change only under smu (see slots.go), so live ≤ maxSize
	// outside a shrink.
	live    atomic.Int64
	maxSize atomic.Int64

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
	// doneCh is closed once done (closed, nothing live, no goroutine) is
	// set; made by the first wait (doneChan). Both under smu.
	doneCh chan struct{}
	done   bool

	// Connect backoff, shared by the maintainer and TryAcquire's background
	// connects: after failures consecutive failures, no background connect
	// starts before retryAt (ns on the clock's scale).
	failures atomic.Int64
	retryAt  atomic.Int64
	// bgDials counts the maintainer's connects in flight (topUpMinIdle).
	bgDials atomic.Int64

	counters counters

	// Health checks (health.go): checking counts objects under a check
	// (they count as idle for MinIdle); healthRunning is set while a pass
	// runs; nextHealth (clock ns) is the maintainer's own.
	checking      atomic.Int64
	healthRunning atomic.Bool
	nextHealth    int64
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

// now returns the precise time on the clock's scale (ns since start). Slow
// paths only: it reads the monotonic clock.
func (p *Pool[T]) now() time.Duration {
	return time.Since(p.start)
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

// recycler is what a pool calls Recycle on: its manager, or, for a keyed
// pool's key, the keyed manager itself (whose Recycle has the same
// signature), so that a check costs one call of the manager's and no
// copy of the Metrics more; wrapped when CheckTimeout is set.
type recycler[T any] interface {
	Recycle(ctx context.Context, obj T, m manager.Metrics) error
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
	state atomic.Uint64
	p     *Pool[T]
	idx   int32  // the entry's index in reg; guarded by reg.mu
	epoch uint32 // the pool's Reset epoch when it was made
	value T
	// lastUsed is the clock's ns at the last release (coarse): written by
	// the holder, read by the holder and by the scan that looks for the
	// most recently used idle object without claiming (claimYoungest),
	// hence atomic (a plain load and store on amd64 and arm64's
	// load-acquire, store-release).
	lastUsed atomic.Int64
	deadline int64 // clock ns past which the lifetime has ended; 0: none
	// leak is the record of the Acquire that took the object, with
	// LeakThreshold set (see leak.go): written by that acquirer, read by
	// the maintainer, hence atomic.
	leak atomic.Pointer[leakRec]
	_    uint64 // keeps m at offset 64 (see m)
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
// [ErrInvalidConfig], naming the field, if cfg is invalid. New starts one
// maintainer goroutine; Close stops it.
func New[T any](m manager.Manager[T], cfg Config) (*Pool[T], error) {
	if m == nil {
		return nil, configerr.New(ErrInvalidConfig, "pool: New: nil Manager")
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	cfg = cfg.named()
	ctx, cancel := context.WithCancelCause(context.Background())
	p := build(m, &cfg, m, skipsRecycle[T](m), time.Now(), solo[T]{}, ctx, cancel, nil)
	p.kick = make(chan struct{}, 1)
	p.run()
	return p, nil
}

// named returns c with a stock slog Observer of its own that carries the
// pool's Name: the Observer may be shared by pools of other names.
func (c Config) named() Config {
	if o, ok := c.Observer.(slogObserver); ok && c.Name != "" {
		o.name = c.Name
		c.Observer = o
	}
	return c
}

// shared is what a keyed pool's keys share in place of their own: an empty
// per-P Local (sealed: it keeps no hint), an exchange that keeps none, and
// the recycler of waiters.
type shared[T any] struct {
	local   *shard.Local[*entry[T]]
	xch     *xbox[T]
	waiters sync.Pool
}

func newShared[T any]() *shared[T] {
	l := shard.NewLocal[*entry[T]](1, nil)
	l.DrainAll(nil)
	return &shared[T]{local: l, xch: &xbox[T]{exchange.New[*entry[T]](exchange.KindNone, 0)}}
}

// recycleSkipper is the optional method by which a Manager whose Recycle
// does nothing says so (see manager.Manager).
type recycleSkipper interface{ SkipRecycle() bool }

// skipsRecycle reports whether a pool may hand m's objects out again
// without calling m's Recycle: m is a manager.Funcs without RecycleFunc,
// or says so with SkipRecycle.
func skipsRecycle[T any](m manager.Manager[T]) bool {
	switch m := m.(type) {
	case manager.Funcs[T]:
		return m.RecycleFunc == nil
	case *manager.Funcs[T]:
		return m.RecycleFunc == nil
	case recycleSkipper:
		return m.SkipRecycle()
	}
	return false
}

// build makes a pool of objects made by m, with cfg normalized (and named),
// whose clock starts at start, whose room beyond MaxSize is rm and whose
// connects and maintenance end when ctx does (cancel, called by Close,
// ends it); run starts it. opt is what the pool asks for the manager's
// optional interface (ReleaseChecker): m itself, or, for a keyed pool's
// key, the keyed manager m adapts; skips says Recycle need not be called
// (see skipsRecycle). sh, for a keyed pool's key,
// is what it shares with the other keys (nil: a pool of its own makes its
// own). A pool of its own makes its kick channel; a key's pool has none
// (its room pokes the keyed pool's maintainer).
func build[T any](m manager.Manager[T], cfg *Config, opt any, skips bool, start time.Time, rm room[T], ctx context.Context, cancel context.CancelCauseFunc, sh *shared[T]) *Pool[T] {
	p := &Pool[T]{
		mgr:     m,
		cfg:     cfg,
		expiry:  cfg.MaxLifetime > 0 || cfg.MaxIdleTime > 0 || cfg.MaxUses > 0,
		maxIdle: int64(cfg.MaxIdleTime),
		maxUses: uint64(cfg.MaxUses),
		start:   start,
		tick:    tickFor(*cfg),
		rm:      rm,
		ctx:     ctx,
		cancel:  cancel,
	}
	if sh == nil || cfg.MaxConnecting < cfg.MaxSize {
		// A connect holds a slot: with MaxConnecting ≥ MaxSize, which only
		// a pool of its own can raise (SetMaxSize), nothing is to bound.
		p.sem = make(chan struct{}, cfg.MaxConnecting)
	}
	if sh == nil {
		p.local.Store(shard.NewLocal[*entry[T]](cfg.localDepth, nil))
		p.xch.Store(&xbox[T]{newExchange[T](cfg.Exchange, cfg.MaxSize)})
		p.waiters = new(sync.Pool)
	} else {
		p.local.Store(sh.local)
		p.xch.Store(sh.xch)
		p.waiters = &sh.waiters
	}
	p.rec = m
	if r, ok := opt.(recycler[T]); ok {
		p.rec = r // a keyed pool's manager, called without going through its key's
	}
	p.relCheck, _ = opt.(manager.ReleaseChecker[T])
	p.recycles = !skips
	p.setHooks()
	p.reg.init(min(cfg.MaxSize, 64))
	p.publishClock() // a keyed pool's key starts late on the shared clock
	p.maxSize.Store(int64(cfg.MaxSize))
	return p
}

// run starts the pool's maintainer.
func (p *Pool[T]) run() {
	p.goStart()
	go p.maintain()
}

// newExchange returns an exchange for a pool of maxSize objects. It holds one
// more than maxSize, so that even with every object parked one slot is free:
// a Ring then never reports full, not even transiently while a consumer is
// between claiming a slot and freeing it (see decision 0001) — up to
// maxExchangeCap: beyond that a Park may fail, and the object, idle without
// a hint, is found by a registry scan.
func newExchange[T any](k exchange.Kind, maxSize int) exchange.Exchange[*entry[T]] {
	return exchange.New[*entry[T]](k, exchangeCap(maxSize))
}

func exchangeCap(maxSize int) int { return min(maxSize, maxExchangeCap-1) + 1 }

// newEntry records a freshly connected object. Its lifetime jitter is drawn
// here, once.
// epoch is the Reset epoch when its connect started: a Reset during the
// connect makes the new object stale at its first check.
func (p *Pool[T]) newEntry(v T, epoch uint32) *entry[T] {
	d := p.now()
	now := int64(d)
	at := p.start.Add(d)
	id := p.connected()
	pe := &paddedEntry[T]{e: entry[T]{p: p, value: v, epoch: epoch,
		m: manager.Metrics{Created: at, LastUsed: at, ID: id}}}
	e := &pe.e
	e.lastUsed.Store(now)
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

// Name returns Config.Name ("" for a nil *Pool, so that an exporter may ask
// before it knows whether it has a pool).
func (p *Pool[T]) Name() string {
	if p == nil {
		return ""
	}
	return p.cfg.Name
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
	if b := p.xch.Load(); p.cfg.Exchange != exchange.KindNone && b.x.Cap() < exchangeCap(n) {
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
	if p.rm.poke(p) {
		return // a keyed pool's maintainer
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}
