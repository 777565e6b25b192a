package shard

import ishard "github.com/poolkit/poolkit/internal/shard"

// MaxDepth bounds the depth of one per-P stack and the size of one spill.
const MaxDepth = 1 << 12

// The implementation checks its own bound: the two must agree (a constant
// index other than 0 does not compile).
var _ = [1]struct{}{}[MaxDepth-ishard.MaxDepth]

// Local is owner-only per-P storage: one LIFO stack of at most Depth values
// per P, and, if made by [NewLocalSpill], a spill behind each stack. See the
// package documentation for who can reach what.
//
// Local is safe for concurrent use. A Push synchronizes before the Pop that
// returns its value. A Local must not be copied after first use.
type Local[T any] struct {
	l ishard.Local[T]
}

// Stats are cumulative counters of a [Local], summed over every P.
type Stats struct {
	Hits   uint64 // Pops served by the caller's own P (stack or spill)
	Steals uint64 // Pops served by another P's spill
}

// NewLocal returns a [Local] with stacks of the given depth. drop, if not nil,
// is called for each value still held by stacks that Retire (or a GOMAXPROCS
// increase) discarded; it runs on a runtime cleanup goroutine and must not
// block for long. NewLocal panics if depth is outside [1, MaxDepth].
func NewLocal[T any](depth int, drop func(T)) *Local[T] {
	return NewLocalSpill(depth, 0, drop)
}

// NewLocalSpill is [NewLocal] with a spill of spill cells per P (rounded up to
// a power of two; 0 for none). A Push that finds its P's stack full moves
// the oldest half of the stack to that P's spill, in one atomic operation,
// and puts its value on the stack; a Pop that finds the stack empty refills
// it with up to half a stack of the spill's newest values, in one atomic
// operation, and if the spill is empty too, takes the oldest value of another
// P's spill. So Pop returns a P's values newest first across both tiers. A
// Push or Pop that the stack serves never touches a spill. NewLocalSpill
// panics if depth is outside [1, MaxDepth] or spill outside [0, MaxDepth].
func NewLocalSpill[T any](depth, spill int, drop func(T)) *Local[T] {
	l := new(Local[T])
	l.l.Init(depth, spill, drop)
	return l
}

// Push puts v on the calling P's stack; if the stack is full, it first moves
// the stack's oldest half to that P's spill. It returns false, keeping
// nothing, if both are full (the stack alone, without a spill).
func (l *Local[T]) Push(v T) bool { return l.l.Push(v) }

// Pop takes the value most recently pushed on the calling P's stack; if the
// stack is empty, the newest value of that P's spill, then the oldest value
// of another P's spill. It returns false if all of those are empty. Pop
// zeroes the slots it empties, so the Local keeps no reference to v.
func (l *Local[T]) Pop() (v T, ok bool) { return l.l.Pop() }

// Len returns the number of values held, summed over every stack and spill.
// It is approximate: each P's count is read without stopping its owner, so
// the sum may be off by the operations in flight. It never blocks.
func (l *Local[T]) Len() int { return l.l.Len() }

// Stats returns the counters. Each P's counters are read without stopping
// it, so the sums may lag by the operations in flight.
func (l *Local[T]) Stats() Stats { return Stats(l.l.Stats()) }

// Retire empties every stack and spill at once: each P's next operation
// starts from nothing. The values they held are handed to the drop function
// given to [NewLocal], if any, from a runtime cleanup that runs once no
// operation can still be using them.
func (l *Local[T]) Retire() { l.l.Retire() }

// Depth returns the capacity of one per-P stack.
func (l *Local[T]) Depth() int { return l.l.Depth() }

// Spill returns the capacity of one P's spill (0 without a spill).
func (l *Local[T]) Spill() int { return l.l.Spill() }

// Procs returns the number of per-P stacks: GOMAXPROCS when the Local was
// made or last grew. The Local holds at most (Depth + Spill) × Procs values.
func (l *Local[T]) Procs() int { return l.l.Procs() }
