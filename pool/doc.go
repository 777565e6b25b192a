// Package pool is a generic, typed pool of costly objects — network
// connections above all — that must be owned by one user at a time. A
// manager.Manager connects, recycles (checks) and closes the objects.
//
//	p, err := pool.New[*Conn](mgr, pool.Config{MaxSize: 16, MaxIdleTime: time.Minute})
//	l, err := p.Acquire(ctx)
//	use(l.Value())
//	l.Release() // l and its copies must not be used afterwards
//
// # Acquire and Release
//
// Acquire takes, in order: an object from the calling P's stack (LIFO), from
// the shared exchange, any other idle object (steal: a scan of every live
// object, which finds those idle on other Ps' stacks); else it reserves a slot
// under MaxSize and connects; else it waits in a FIFO queue. Whenever anyone
// is waiting, a newcomer queues behind them. With MaxIdleTime set, the
// search prefers the objects released most recently, so that those a
// smaller load no longer needs go idle and are closed. Every object handed
// out, by any path, passes the expiry checks (lifetime with jitter drawn
// once per object, uses, Reset) and, if it was used before,
// Manager.Recycle under the acquirer's context (unless the manager has no
// check: see manager.Manager); an object that fails is closed and the
// search goes on.
//
// Release checks the object (expiry, the manager's optional [manager.ReleaseChecker]),
// then hands it straight to the oldest waiter, else makes it idle and leaves
// a pointer to it on the calling P's stack, else in the exchange. (The stacks
// and the exchange hold such pointers — hints — and decide nothing: one
// compare-and-swap on the object's own state word claims it, whoever found
// it.) Destroy closes it instead; Detach
// gives it to the caller. Manager.Close always runs on one of the pool's
// closer goroutines, never on the caller's.
//
// About one release in 1024 of each object yields the processor
// ([runtime.Gosched]) once the object is back: goroutines that acquire and
// release in a loop take turns a thousand operations long instead of a
// scheduler time slice, so each gets its share of the pool and few are
// preempted while they hold an object.
//
// # Leases
//
// A [Lease] is a small value: the object's record and a generation (the
// object's state word when the lease took it; every claim and release moves
// that word on, so no generation repeats). Ending a lease (Release, Destroy,
// Detach) is one compare-and-swap on the state word, so every later use of
// the lease or of any copy panics with a "pool: " message, even after the
// object went to someone else, and two copies ended concurrently cannot both
// return the object.
//
// # Time
//
// The hot path reads no clock and never calls ctx.Done(): a maintainer
// goroutine publishes a coarse clock every tick (an eighth of the shortest of
// [Config.MaxIdleTime], [Config.MaxLifetime], [Config.HealthCheckPeriod] and
// [Config.LeakThreshold] that are set, clamped to [1ms, 100ms]; 100ms if none
// is), and the expiry checks and [manager.Metrics.LastUsed] use it. Lifetimes and idle times
// are therefore enforced to within about one tick.
//
// # Production
//
// [Config]'s HealthCheckPeriod checks idle objects in the background (with
// Manager.Recycle, bounded by CheckTimeout, which also bounds the acquire
// path's checks), LeakThreshold reports leases held too long with the stack
// of their Acquire, MaxIdle caps idle objects, and an [Observer] ([NewSlogObserver],
// or one of your own: a tracer, a metrics recorder) is told of acquires,
// connects, closes and leaks. Warm makes max(MinIdle, 1) objects at
// start-up, or returns the first connect error at once. With AcquireTimeout
// set, an Acquire whose connect fails retries until its deadline, so that a
// short outage fails no Acquire. [Stats] carries a histogram of the time
// blocked acquires took, and timeout errors the pool's state. With none of
// these set, the fast paths are exactly as they would be without them. A
// panic in the Manager on one of the pool's own goroutines (a connect, a
// close) is recovered and reported as a *PanicError.
//
// # Keyed pools
//
// [Keyed] is a pool per key — a tenant's database, a cluster node, an
// upstream host — under one budget: [KeyedConfig.MaxSize] bounds all keys'
// objects together, exactly, and MaxSizePerKey each key's. Each key's
// objects are a Pool's, with its leases, checks, Observer and Stats. At the
// cap, a key that needs an object closes the least recently used idle
// object of a key nobody waits for ([CloseEvict]) rather than wait; waiters
// for room are served in arrival order across keys; a key's state is
// dropped once it has no object and no waiter. [manager.Keyed] is its
// manager contract.
//
// # Errors
//
// Acquire returns [ErrClosed] after Close; TryAcquire returns [ErrExhausted] when
// nothing is idle. A wait or connect ended by a deadline (the context's or
// [Config.AcquireTimeout]) returns an error matching both [ErrTimeout] and
// [context.DeadlineExceeded]; a cancellation matches [context.Canceled]; both
// also match the context's cause. A connect error is returned wrapped (with
// AcquireTimeout set, the last one, once the deadline has passed). New
// returns errors matching [ErrInvalidConfig] that name the bad field.
//
// See docs/DESIGN.md in the repository for the wake-up protocol and the
// invariants, and docs/decisions/0003, 0004, 0006, 0008, 0010 to 0012 and
// 0014 (keyed pools) for the measured choices.
package pool
