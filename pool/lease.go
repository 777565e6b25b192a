package pool

import "github.com/poolkit/poolkit/manager"

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

// Metrics returns the leased object's metrics: when it was connected, when
// it was last released (to the resolution of the pool's clock), how many
// times it has been handed out, this lease included, and its ID (from 1, in
// the order connects returned; the ID in [Observer] events). It panics if the
// lease has ended.
func (l Lease[T]) Metrics() manager.Metrics {
	return l.live().m
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
