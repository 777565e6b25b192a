package pool

import (
	"context"
	"fmt"
	"time"
)

// Observer is told what a pool does, for logs, traces and metrics
// ([Config.Observer]; [NewSlogObserver] is a stock one). Every method is called
// with a context: the acquirer's for acquires; for a connect, the context of
// the Acquire, TryAcquire or Warm that caused it (its values; the maintainer's
// connects get a background context); for closes, a background context; for
// a leak, the context of the Acquire that took the lease.
//
// Methods are called synchronously, from many goroutines at once and never
// under a lock of the pool's: they must be safe for concurrent use and
// should be quick (AcquireStart and AcquireEnd run on every Acquire). They
// must not call the pool's Acquire, nor Close.
//
// An Observer costs every Acquire and Release the slow path (the hot path's
// figures are in docs/BENCHMARKS.md); a pool without one pays nothing. Its
// methods should not panic. A panic in ConnectEnd, Closed or Leak, which run
// on the pool's own goroutines, is recovered and dropped, so that it cannot
// kill the process; one in AcquireStart or AcquireEnd reaches the caller of
// Acquire, after the pool has taken back the object it would have handed
// out.
//
// Methods will be added to Observer as the pool reports new events. An
// implementation must therefore embed [NopObserver], and override the
// methods it needs: it then keeps compiling when a method is added, and
// ignores the new event until it overrides that method too. The stock
// observers ([NewSlogObserver], and contrib/poolotel's) do so.
type Observer interface {
	// AcquireStart is called as an Acquire or TryAcquire begins, even one
	// whose context has already ended (its AcquireEnd then carries the
	// context's error). The context it returns is used for the rest of the
	// Acquire — Recycle, a connect's values, AcquireEnd — so a tracer can
	// start a span here and end it in AcquireEnd. It must not return nil.
	AcquireStart(ctx context.Context) context.Context
	// AcquireEnd is called as an Acquire or TryAcquire returns, once for
	// every AcquireStart: for an Acquire that panics (a Recycle did) too,
	// with Err a *PanicError, before the panic goes on.
	AcquireEnd(ctx context.Context, ev AcquireEvent)
	// ConnectEnd is called as a Manager.Connect returns (or panics: Err is
	// then a *PanicError).
	ConnectEnd(ctx context.Context, ev ConnectEvent)
	// Closed is called as a Manager.Close returns (or panics: Err is then a
	// *PanicError).
	Closed(ctx context.Context, ev CloseEvent)
	// Leak is called once for a lease held longer than
	// Config.LeakThreshold, while it is still held.
	Leak(ctx context.Context, ev LeakEvent)
}

// NopObserver is an [Observer] that does nothing. Every implementation of
// [Observer] embeds it (see there): it supplies the methods the
// implementation does not override, those added to Observer later included.
// AcquireStart returns its context unchanged.
type NopObserver struct{}

func (NopObserver) AcquireStart(ctx context.Context) context.Context { return ctx }
func (NopObserver) AcquireEnd(context.Context, AcquireEvent)         {}
func (NopObserver) ConnectEnd(context.Context, ConnectEvent)         {}
func (NopObserver) Closed(context.Context, CloseEvent)               {}
func (NopObserver) Leak(context.Context, LeakEvent)                  {}

// AcquireEvent describes one Acquire or TryAcquire as it returns.
type AcquireEvent struct {
	// Wait is how long the call took, from AcquireStart to AcquireEnd:
	// finding, checking, and any connect or queueing.
	Wait time.Duration
	ID   uint64 // the object's ID (manager.Metrics.ID); 0 on error
	Err  error  // what Acquire returned
}

// ConnectEvent describes one Manager.Connect.
type ConnectEvent struct {
	Duration time.Duration // including the wait for a MaxConnecting slot
	ID       uint64        // the new object's ID; 0 on error
	Err      error         // as an Acquire would return it wrapped
}

// CloseReason says why an object was closed.
type CloseReason uint8

// The reasons an object is closed, the indexes of [Stats.ClosedBy].
const (
	CloseLifetime     CloseReason = reasonLifetime     // MaxLifetime
	CloseIdle         CloseReason = reasonIdle         // MaxIdleTime
	CloseUses         CloseReason = reasonUses         // MaxUses
	CloseRecycle      CloseReason = reasonRecycle      // Manager.Recycle failed on the acquire path
	CloseDestroy      CloseReason = reasonDestroy      // Lease.Destroy
	CloseReset        CloseReason = reasonReset        // Reset
	CloseReleaseCheck CloseReason = reasonReleaseCheck // ReleaseChecker refused it
	CloseShrink       CloseReason = reasonShrink       // above MaxSize after SetMaxSize
	ClosePool         CloseReason = reasonClosed       // the pool was closed
	CloseMaxIdle      CloseReason = reasonMaxIdle      // released while MaxIdle objects were idle
	CloseHealthCheck  CloseReason = reasonHealth       // a background health check failed
	CloseEvict        CloseReason = reasonEvict        // a keyed pool closed it for a key that held no object
	CloseEvictSurplus CloseReason = reasonEvictSurplus // a keyed pool closed it, idle long enough to be surplus, for another key
	CloseEvictHot     CloseReason = reasonEvictHot     // a keyed pool closed it, idle, for a key whose waiters outnumbered its objects
)

var reasonNames = [nReasons]string{"", "lifetime", "idle", "uses", "recycle", "destroy",
	"reset", "release_check", "shrink", "pool_closed", "max_idle", "health_check", "evict",
	"evict_surplus", "evict_hot"}

func (r CloseReason) String() string {
	if r > 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("CloseReason(%d)", uint8(r))
}

// CloseEvent describes one object's close, as Manager.Close returns.
type CloseEvent struct {
	Reason CloseReason
	ID     uint64
	Err    error // Manager.Close's
}

// LeakEvent describes a lease held longer than [Config.LeakThreshold].
type LeakEvent struct {
	ID    uint64
	Held  time.Duration // how long it had been held when the leak was found
	Stack string        // the goroutine stack of the Acquire that took it, one frame a line
}

// observeConnect reports a connect that started at start (p.now) to the
// Observer; cause is the context of the call that caused it.
func (p *Pool[T]) observeConnect(cause context.Context, start time.Duration, e *entry[T], err error) {
	ev := ConnectEvent{Duration: p.now() - start, Err: err}
	if e != nil {
		ev.ID = e.m.ID
	}
	defer dropPanic() // a dialer goroutine: see Observer
	p.cfg.Observer.ConnectEnd(cause, ev)
}

// closeNote is what the Observer learns of a closed object, taken from its
// entry before the entry is forgotten; nil without an Observer.
type closeNote struct{ id uint64 }

func (p *Pool[T]) noteClose(e *entry[T]) *closeNote {
	if p.cfg.Observer == nil {
		return nil
	}
	return &closeNote{id: e.m.ID}
}

func (p *Pool[T]) observeClose(n *closeNote, r int, err error) {
	defer dropPanic() // a closer goroutine: see Observer
	p.cfg.Observer.Closed(context.Background(), CloseEvent{Reason: CloseReason(r), ID: n.id, Err: err})
}
