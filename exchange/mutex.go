package exchange

import "sync"

// Mutex is a bounded FIFO exchange kept in a fixed-capacity circular buffer
// guarded by a [sync.Mutex]. Make one with [NewMutex]; the zero value is not
// usable. A Mutex must not be copied after first use.
//
// Mutex is safe for concurrent use by any number of goroutines, and every
// operation is linearizable: Park reports false only when Cap values are
// parked, Unpark reports false only when none is. A Park synchronizes before
// the Unpark that returns its value (both hold the lock).
//
// The lock is held for a few instructions and nothing is called under it, but
// a goroutine preempted while holding it makes every other caller wait until
// it runs again.
type Mutex[T any] struct {
	// mu guards head, n and the elements of buf. Nothing that can block or
	// call out is done while it is held.
	mu sync.Mutex
	// buf holds the values; the slice header is read-only after NewMutex.
	// Elements outside the live window [head, head+n) are zero.
	buf []T
	// head is the index in buf of the oldest parked value. Guarded by mu.
	head int
	// n is the number of parked values. Guarded by mu.
	n int
	// parked and unparked count successful Parks and Unparks. Guarded by
	// mu (plain adds: an atomic store would be a locked instruction on amd64).
	parked, unparked uint64
}

// NewMutex returns an empty [Mutex] that holds exactly capacity values. It
// panics if capacity < 1.
func NewMutex[T any](capacity int) *Mutex[T] {
	checkCapacity("NewMutex", capacity)
	return &Mutex[T]{buf: make([]T, capacity)}
}

// Park stores v at the tail and reports true, or reports false, leaving the
// exchange unchanged and v not retained, if Cap values are already parked.
func (m *Mutex[T]) Park(v T) bool {
	m.mu.Lock()
	if m.n == len(m.buf) {
		m.mu.Unlock()
		return false
	}
	i := m.head + m.n
	if i >= len(m.buf) {
		i -= len(m.buf)
	}
	m.buf[i] = v
	m.n++
	m.parked++
	m.mu.Unlock()
	return true
}

// Unpark removes and returns the oldest parked value and true, or returns the
// zero T and false if none is parked. The slot is zeroed, so the exchange does
// not retain the value.
func (m *Mutex[T]) Unpark() (T, bool) {
	var zero T
	m.mu.Lock()
	if m.n == 0 {
		m.mu.Unlock()
		return zero, false
	}
	v := m.buf[m.head]
	m.buf[m.head] = zero // retain nothing (DESIGN invariant 8)
	m.head++
	if m.head == len(m.buf) {
		m.head = 0
	}
	m.n--
	m.unparked++
	m.mu.Unlock()
	return v, true
}

// Len returns the number of parked values, which may be stale by the time it
// returns; it is always in [0, Cap].
func (m *Mutex[T]) Len() int {
	m.mu.Lock()
	n := m.n
	m.mu.Unlock()
	return n
}

// Cap returns the capacity given to [NewMutex].
func (m *Mutex[T]) Cap() int { return len(m.buf) }

// Counts returns the number of successful Parks and Unparks.
func (m *Mutex[T]) Counts() (parked, unparked uint64) {
	m.mu.Lock()
	parked, unparked = m.parked, m.unparked
	m.mu.Unlock()
	return parked, unparked
}
