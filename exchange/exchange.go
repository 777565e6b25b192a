package exchange

import (
	"math/bits"
	"strconv"
)

// Exchange is a bounded FIFO store of idle values shared by many goroutines.
//
// Implementations are safe for concurrent use by any number of goroutines.
// A Park synchronizes before the Unpark that returns its value.
type Exchange[T any] interface {
	// Park stores v and reports true, or reports false, leaving the exchange
	// unchanged and v not retained, when the exchange is full.
	Park(v T) bool
	// Unpark removes and returns the oldest parked value and true, or returns
	// the zero T and false when no completed Park is available.
	Unpark() (T, bool)
	// Len returns the number of parked values. Under concurrency it is a
	// snapshot that may be stale by the time it returns, but it is always
	// within [0, Cap()].
	Len() int
	// Cap returns the maximum number of values the exchange can hold.
	Cap() int
	// Counts returns the number of successful Parks and of successful
	// Unparks since the exchange was made. Each count is exact and only
	// grows; under concurrency the pair is a snapshot that may miss
	// operations in flight (parked - unparked is within [0, Cap()] once the
	// exchange is quiescent). It costs the Park and Unpark paths nothing:
	// callers that need such counters need not keep their own.
	Counts() (parked, unparked uint64)
}

// Compile-time checks that every implementation satisfies Exchange.
var (
	_ Exchange[int] = (*Ring[int])(nil)
	_ Exchange[int] = (*Mutex[int])(nil)
	_ Exchange[int] = None[int]{}
	_ Exchange[int] = (*None[int])(nil)
)

// None is an exchange that holds nothing: Park always reports false and Unpark
// always reports false. Its zero value is ready to use; it has no state, so it
// is safe for concurrent use and may be copied freely.
type None[T any] struct{}

// Park does not store v and reports false.
func (None[T]) Park(T) bool { return false }

// Unpark returns the zero T and false.
func (None[T]) Unpark() (T, bool) {
	var zero T
	return zero, false
}

// Len returns 0.
func (None[T]) Len() int { return 0 }

// Cap returns 0.
func (None[T]) Cap() int { return 0 }

// Counts returns 0, 0.
func (None[T]) Counts() (parked, unparked uint64) { return 0, 0 }

// checkCapacity panics, with the package prefix, unless capacity >= 1.
func checkCapacity(fn string, capacity int) {
	if capacity < 1 {
		panic("exchange: " + fn + ": capacity must be >= 1, got " + strconv.Itoa(capacity))
	}
}

// ceilPow2 returns the smallest power of two >= n, for n >= 1. It panics if
// that power of two does not fit in an int.
func ceilPow2(fn string, n int) int {
	if n <= 1 {
		return 1
	}
	shift := bits.Len(uint(n - 1))
	if shift >= bits.UintSize-1 {
		panic("exchange: " + fn + ": capacity too large: " + strconv.Itoa(n))
	}
	return 1 << shift
}
