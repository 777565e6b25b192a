// Package manager defines how a pool makes, checks and destroys its objects,
// and provides stock managers.
//
// A pool takes a Manager[T]. Two are provided:
//
//   - Funcs builds a Manager from up to three functions, for objects that
//     need no type of their own; the missing ones default to "always
//     reusable" (and the pool then skips the check) and
//     "nothing to close".
//   - Dialer is a Manager[net.Conn] for TCP and Unix stream sockets: it dials
//     with a net.Dialer (timeout, keep-alive probes, TCP_USER_TIMEOUT on
//     Linux, the context's deadline), clears the deadlines a user left and
//     checks before each reuse, without blocking or consuming anything, that
//     the connection is open and has nothing unread (Recycle returns an
//     error matching ErrBroken otherwise), and closes it.
//
// Every [Manager], these included, must be safe for concurrent use: a pool
// calls it from several goroutines at once, though never for the same
// object concurrently.
package manager

import (
	"context"
	"errors"
	"time"
	"unsafe"
)

// Manager makes, checks and destroys the objects of one pool. A pool calls its
// methods from several goroutines at once, never while holding a lock of its
// own, and never for the same object concurrently.
type Manager[T any] interface {
	// Connect makes a new object. ctx bounds the attempt (the pool's connect
	// timeout, and the pool's own lifetime); it is not the acquirer's context,
	// so a connect outlives an acquirer that gave up. It runs on a goroutine
	// of the pool's: a Connect that panics fails, and the panic reaches the
	// acquirer as an error.
	Connect(ctx context.Context) (T, error)
	// Recycle checks a used object before it is handed out again, under the
	// acquirer's context. An error closes the object — unless ctx has ended
	// by the time Recycle returns: then the failure is taken as the caller's
	// cancellation, not the object's fault, and the object stays in the pool.
	// An error matching ErrBroken closes the object whatever ctx's state.
	// A Recycle that panics still panics in the acquirer, but the pool closes
	// the object and frees its slot first.
	//
	// A Manager whose Recycle does nothing and always returns nil may say so
	// with a method SkipRecycle() bool reporting true: the pool then hands
	// used objects out without calling Recycle, and pays nothing for a check
	// it does not need (the call, and the guard against its panic). The pool
	// asks once, when it is made. A Funcs (KeyedFuncs) without RecycleFunc
	// is taken as saying so.
	Recycle(ctx context.Context, obj T, m Metrics) error
	// Close destroys the object. The pool calls it on a goroutine of its own,
	// never on the caller's; a Close that panics counts as one that failed.
	Close(obj T) error
}

// ErrBroken is matched (with [errors.Is]) by a Recycle or CheckRelease error
// that declares the object dead: the pool closes it even when the caller's
// context has ended, which otherwise makes a failed Recycle the caller's
// cancellation and leaves the object in the pool. Wrap it when the object
// itself is gone, for example a connection that its driver closed because
// the check was cut short.
var ErrBroken = errors.New("manager: object broken")

// ReleaseChecker may be implemented by a [Manager] to check an object when it
// is released: an error closes the object instead of pooling it (for example,
// a connection released in the middle of a transaction). It is asked only
// about an object that passed the pool's expiry checks: one released past its
// lifetime or its uses, or from before a Reset, is closed without it.
// CheckRelease runs on the releasing goroutine, under no lock of the pool's.
// It sits beside Manager as driver.Validator sits beside driver.Conn. If it
// panics, the object is closed and its slot freed, and the panic goes on to
// the caller of Release.
type ReleaseChecker[T any] interface {
	CheckRelease(obj T) error
}

// Metrics describes an object's use so far, for Recycle.
type Metrics struct {
	Created  time.Time // when Connect returned it
	LastUsed time.Time // when it was last released, to the resolution of the pool's coarse clock (poolkit's pool: 100 ms or finer)
	Uses     uint64    // how many times it has been handed out, this hand-out excluded
	// ID numbers the object within its pool, from 1, in the order its
	// Connect returned: a name for logs.
	ID uint64
}

// Metrics is 64 bytes on purpose, four 16-byte moves with no overlap: at 56
// bytes (without ID), its copy into Recycle's arguments stalled on store
// forwarding (decision 0006). This does not compile if its size changes.
var _ = [1]struct{}{}[unsafe.Sizeof(Metrics{})-64]
