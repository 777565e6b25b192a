package exchange

import (
	"sync/atomic"

	"github.com/poolkit/poolkit/internal/cacheline"
)

// Ring is a lock-free bounded multi-producer multi-consumer FIFO exchange:
// Dmitry Vyukov's bounded MPMC queue, as in crossbeam's ArrayQueue. Make one
// with [NewRing]; the zero value is not usable. A Ring must not be copied
// after first use.
//
// Ring is safe for concurrent use by any number of goroutines. A Park
// synchronizes before the Unpark that returns its value. Values come out in
// the order of the Parks' claims on the tail, so the values parked by one
// goroutine are unparked in the order it parked them.
//
// Park and Unpark never block and never wait for another goroutine: a lost
// compare-and-swap is retried, and a slot that another goroutine has claimed
// but not yet finished with is reported as full (Park) or empty (Unpark)
// rather than waited for. Such reports are transient; see [Ring.Park] and
// [Ring.Unpark].
//
// How it works. Positions are unbounded counters: tail is the position the
// next Park claims, head the position the next Unpark claims, and position p
// lives in slot p&mask. Each slot carries a sequence number, its state for the
// current lap:
//
//	seq == 2*p    the slot is free for the Park that claims position p
//	seq == 2*p+1  the slot holds the value parked at position p, ready for
//	              the Unpark that claims position p
//
// An Unpark at position p frees the slot for position p+cap by storing
// 2*(p+cap). (Vyukov's original uses p and p+1, which collide when cap is 1;
// doubling keeps the two states distinct for every capacity.) A slot's
// sequence only grows, which is what lets a single load tell a stale head or
// tail apart from a full or empty ring.
type Ring[T any] struct {
	_ cacheline.Pad
	// mask is cap-1; read-only after NewRing.
	mask uint64
	// slots holds cap slots; the slice header is read-only after NewRing.
	// Slot contents are owned as described on ringSlot.
	slots []ringSlot[T]
	_     cacheline.Pad
	// head is the next position to unpark. Any Unpark may advance it by CAS;
	// Park only reads it, to tell "full" from "a consumer is mid-Unpark".
	head atomic.Uint64
	_    cacheline.Pad
	// tail is the next position to park. Any Park may advance it by CAS;
	// Unpark only reads it, to tell "empty" from "a producer is mid-Park".
	tail atomic.Uint64
	_    cacheline.Pad
}

// ringSlot is one cell of a Ring. val is owned by whoever holds the slot:
// the Park that claimed position p (by CAS on tail) owns it until it stores
// seq = 2*p+1; the Unpark that claimed position p (by CAS on head) owns it
// until it stores seq = 2*(p+cap). Nobody else touches val.
type ringSlot[T any] struct {
	seq atomic.Uint64
	val T
}

// NewRing returns an empty [Ring] that holds at least capacity values: the
// capacity is rounded up to a power of two, which Cap reports. NewRing panics
// if capacity < 1 (or if the rounded capacity does not fit in an int).
func NewRing[T any](capacity int) *Ring[T] {
	checkCapacity("NewRing", capacity)
	n := ceilPow2("NewRing", capacity)
	r := &Ring[T]{
		mask:  uint64(n - 1),
		slots: make([]ringSlot[T], n),
	}
	for i := range r.slots {
		// Slot i is free for position i. These stores happen before NewRing
		// returns, hence before any use of r by another goroutine (which
		// needs r to be published to it by some synchronizing operation).
		r.slots[i].seq.Store(2 * uint64(i))
	}
	return r
}

// Park stores v at the tail and reports true, or reports false if the ring is
// full. When Park reports false the ring is unchanged and v is not retained.
//
// Park reports false in two cases:
//   - the ring is full: at the instant Park read head, Cap values were parked
//     and not yet claimed by any Unpark (this answer is linearizable);
//   - transiently, the slot Park needs is still being emptied by an Unpark
//     that has claimed it (advanced head) but not yet freed it. That window
//     is a few instructions long, but the runtime's asynchronous preemption
//     can stop the consumer inside it, and then Park reports full until that
//     consumer runs again, even though Len may be below Cap. Nothing is lost:
//     the caller keeps v and decides what to do with it.
//
// A Park that loses a race with another Park for the tail does not report
// full: it re-reads the tail and tries again. Park never waits for another
// goroutine; each retry follows another goroutine's progress.
func (r *Ring[T]) Park(v T) bool {
	// A stale tail is harmless: the sequence check below detects it.
	pos := r.tail.Load()
	for {
		s := &r.slots[pos&r.mask]
		// Acquire: if seq == 2*pos, this load observes the Unpark that freed
		// the slot (its store of 2*pos), and with it that Unpark's read and
		// zeroing of val, so the write to val below cannot race with them.
		seq := s.seq.Load()
		switch diff := int64(seq - 2*pos); {
		case diff == 0:
			// The slot is free for position pos. Claim pos: the CAS succeeds
			// for exactly one Park, which then owns val alone. A failed CAS
			// means another Park claimed pos first; retry from the new tail.
			if r.tail.CompareAndSwap(pos, pos+1) {
				s.val = v
				// Release: publishes the write to val. The Unpark that loads
				// 2*pos+1 from seq sees v. This store is the end of the
				// claim-to-publish window (see Ring.Unpark).
				s.seq.Store(2*pos + 1)
				return true
			}
			pos = r.tail.Load()
		case diff < 0:
			// The slot still belongs to position pos-cap: its value has not
			// been unparked and freed. Since a slot's seq only grows and a
			// Park can claim pos only after seeing seq == 2*pos, tail was
			// still pos when seq was read: pos is not stale.
			//
			// If head is pos-cap, no Unpark has claimed that value, so at the
			// instant of this load tail-head == cap: really full.
			if r.head.Load()+r.mask+1 == pos {
				return false
			}
			// An Unpark has claimed pos-cap (advanced head) but not yet freed
			// the slot. If it has finished meanwhile, seq has grown: retry.
			// Otherwise report full rather than wait for it (documented).
			if s.seq.Load() == seq {
				return false
			}
			pos = r.tail.Load()
		default:
			// seq > 2*pos: another Park has already claimed pos, so the tail
			// we hold is stale. Reload it.
			pos = r.tail.Load()
		}
	}
}

// Unpark removes and returns the value at the head and true, or returns the
// zero T and false if no parked value is available. The slot is zeroed before
// it is handed back to producers, so the ring does not retain the value.
//
// Unpark reports false in two cases:
//   - the ring is empty: at the instant Unpark read tail, every Park that had
//     claimed a position had also been unparked (linearizable);
//   - transiently, the head slot has been claimed by a Park (it advanced
//     tail) that has not yet published its value (stored the slot's
//     sequence). Unpark does not wait for that producer, so it is not
//     linearizable at that instant: a Park that completed later, behind the
//     stalled one, may be invisible until the stalled producer publishes. The
//     window is a few instructions long (between the CAS on tail and the
//     store of the sequence in Park), but Go cannot disable preemption there
//     without reaching into the runtime, and asynchronous preemption can land
//     inside it. The consequence is only a transient "empty": no value is
//     lost or delivered twice, and the stalled value becomes available as
//     soon as its producer runs again.
//
// An Unpark that loses a race with another Unpark for the head does not report
// empty: it re-reads the head and tries again.
func (r *Ring[T]) Unpark() (T, bool) {
	// A stale head is harmless: the sequence check below detects it.
	pos := r.head.Load()
	for {
		s := &r.slots[pos&r.mask]
		// Acquire: if seq == 2*pos+1, this load observes the Park that
		// published position pos (its store of 2*pos+1), and with it that
		// Park's write to val, so the read of val below sees the value.
		seq := s.seq.Load()
		switch diff := int64(seq - (2*pos + 1)); {
		case diff == 0:
			// The slot holds the value for position pos. Claim pos: the CAS
			// succeeds for exactly one Unpark, which then owns val alone. A
			// failed CAS means another Unpark took pos first; retry.
			if r.head.CompareAndSwap(pos, pos+1) {
				v := s.val
				var zero T
				s.val = zero // retain nothing (DESIGN invariant 8)
				// Release: publishes the read and zeroing of val before the
				// slot is handed to the Park that will claim pos+cap, which
				// acquires this store. This store ends the window in which
				// Park may report full transiently.
				s.seq.Store(2 * (pos + r.mask + 1))
				return v, true
			}
			pos = r.head.Load()
		case diff < 0:
			// seq == 2*pos: no value published for position pos yet. As a
			// slot's seq only grows and an Unpark claims pos only after seeing
			// 2*pos+1, head was still pos when seq was read: pos is not stale.
			//
			// If tail is pos, no Park has claimed pos: at the instant of this
			// load head == tail, the ring is really empty.
			if r.tail.Load() == pos {
				var zero T
				return zero, false
			}
			// A Park has claimed pos (advanced tail) but not yet published.
			// If it has published meanwhile, seq has grown: retry. Otherwise
			// report empty rather than wait for it (documented above).
			if s.seq.Load() == seq {
				var zero T
				return zero, false
			}
			pos = r.head.Load()
		default:
			// seq > 2*pos+1: another Unpark has already taken pos, so the head
			// we hold is stale. Reload it.
			pos = r.head.Load()
		}
	}
}

// Len returns the number of values between head and tail: parked values,
// plus positions claimed by a Park not yet published, minus positions claimed
// by an Unpark. Under concurrency it is approximate, but always in [0, Cap].
func (r *Ring[T]) Len() int {
	// Load head before tail: tail only grows, so the tail read here is at
	// least the tail at the moment head was read, which was >= head. The
	// difference is therefore never negative; it can exceed cap if both moved
	// between the loads, hence the clamp.
	head := r.head.Load()
	tail := r.tail.Load()
	n := tail - head
	if c := r.mask + 1; n > c {
		n = c
	}
	return int(n)
}

// Cap returns the ring's capacity: the capacity given to [NewRing] rounded up
// to a power of two.
func (r *Ring[T]) Cap() int { return int(r.mask + 1) }

// Counts returns the number of successful Parks and Unparks: the tail and
// head positions, which advance exactly once per successful Park (the CAS
// that claims a position) and per successful Unpark. A Park counted here may
// not have published its value yet (see [Ring.Unpark]).
func (r *Ring[T]) Counts() (parked, unparked uint64) {
	// Head before tail, as in Len, so that unparked <= parked.
	unparked = r.head.Load()
	parked = r.tail.Load()
	return parked, unparked
}
