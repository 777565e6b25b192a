package pool

import "time"

// room is where a pool's room comes from beyond its own MaxSize: the one
// seam between a Pool and a keyed pool's budget. A pool of its own has
// nothing beyond MaxSize (solo, whose methods do nothing); each key's pool
// of a Keyed shares the keyed pool's budget through its keyMember (see
// budget.go). Pool calls it on slow paths only: the fast paths never
// reach it, so a plain pool pays nothing for it where it counts.
type room[T any] interface {
	// take is reserve's step under p's smu, with p's own limit met: it
	// reports whether p may raise live by one (a global slot is taken).
	take(p *Pool[T]) bool
	// refused follows a reserve that take refused, outside every lock.
	refused(p *Pool[T])
	// freed follows every transition that lowered p's live, outside
	// smu: the slot goes back. to, if not nil, is the pool an eviction
	// closed the object for (see Pool.evict).
	freed(p *Pool[T], to *Pool[T])
	// want and unwant follow a waiter into and out of p's queue, under p's
	// mu; resumed follows a queued waiter that backed off after a failed
	// connect (waiter.objOnly) as it takes slots again, under p's mu.
	want(w *waiter[T])
	unwant(w *waiter[T])
	resumed(w *waiter[T])
	// makeRoom follows a dispatch of p that found waiters but no slot
	// (the global cap, not p's own).
	makeRoom(p *Pool[T])
	// tryRoom follows a TryAcquire or a Warm of p refused at the global
	// cap: room for its retry.
	tryRoom(p *Pool[T])
	// yield decides, for an object p holds and is about to give back
	// (to a waiter of p's, or idle), whether it is closed for another
	// pool's room instead; it returns that pool and the reason, or nil.
	yield(p *Pool[T]) (to *Pool[T], reason int)
	// busy counts the calls running in p that must keep it alive while
	// they run (an Acquire's block, a Warm).
	busy(p *Pool[T], delta int64)
	// goroutine counts the goroutines p starts (+1) and that exit (-1).
	goroutine(delta int)
	// scanned tells of an object an Acquire found by a scan of the
	// registry (no hint led to it).
	scanned(p *Pool[T])
	// connected tells of a successful connect that took d.
	connected(d time.Duration)
	// poke asks for a maintenance pass of p soon.
	poke(p *Pool[T]) bool
	// describe is added to the state a timeout error reports ("" for
	// none).
	describe() string
}

// solo is the room of a pool of its own: MaxSize is all there is.
type solo[T any] struct{}

func (solo[T]) take(*Pool[T]) bool             { return true }
func (solo[T]) refused(*Pool[T])               {}
func (solo[T]) freed(*Pool[T], *Pool[T])       {}
func (solo[T]) want(*waiter[T])                {}
func (solo[T]) unwant(*waiter[T])              {}
func (solo[T]) resumed(*waiter[T])             {}
func (solo[T]) makeRoom(*Pool[T])              {}
func (solo[T]) tryRoom(*Pool[T])               {}
func (solo[T]) yield(*Pool[T]) (*Pool[T], int) { return nil, 0 }
func (solo[T]) busy(*Pool[T], int64)           {}
func (solo[T]) goroutine(int)                  {}
func (solo[T]) connected(time.Duration)        {}
func (solo[T]) scanned(*Pool[T])               {}
func (solo[T]) poke(*Pool[T]) bool             { return false }
func (solo[T]) describe() string               { return "" }
