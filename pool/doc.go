// Package pool is a generic, typed pool of costly objects — network
// connections above all — that one user owns at a time. A manager.Manager
// connects, checks and closes them; see the package example.
//
//	p, err := pool.New[*Conn](mgr, pool.Config{MaxSize: 16, MaxIdleTime: time.Minute})
//	l, err := p.Acquire(ctx)
//	use(l.Value())
//	l.Release() // l and its copies must not be used afterwards
//
// The contract:
//
//   - MaxSize bounds the live objects exactly: idle, leased, being
//     connected and being closed, until Manager.Close has returned.
//   - Acquire hands out an idle object, else connects one within MaxSize,
//     else waits; waiters are served in arrival order, and a newcomer
//     queues behind them. An object used before passes Manager.Recycle,
//     under the acquirer's context, before it is handed out; one that fails
//     is closed and the search goes on.
//   - A Lease is the one owner's handle. Release gives the object back,
//     Destroy closes it, Detach gives it to the caller; any later use of the
//     lease, or of a copy, panics with a "pool: " message.
//   - Lifetimes, idle times and uses are enforced to within about one tick
//     of the pool's clock (at most 100 ms). Manager.Close always runs on a
//     goroutine of the pool's, never on the caller's.
//   - Errors: ErrClosed after Close; ErrExhausted from TryAcquire when
//     nothing is idle; a deadline matches ErrTimeout and
//     context.DeadlineExceeded, a cancellation context.Canceled; a connect
//     error is returned wrapped; New's errors match ErrInvalidConfig and
//     name the field. A panic in the Manager on a goroutine of the pool's is
//     recovered and reported as a *PanicError.
//   - Stats is always on, and every snapshot is consistent: Created − Closed
//     − Detached == Live − Connecting.
//
// Config's health checks, leak threshold, Observer and Warm are for
// production; with none of them set the fast paths pay nothing for them.
//
// Keyed is one pool per key — a tenant's database, a cluster node — under
// one budget: KeyedConfig.MaxSize bounds all keys' objects together,
// exactly, and room moves between keys only when it pays.
//
// docs/DESIGN.md in the repository says how it works and which test checks
// each invariant.
package pool
