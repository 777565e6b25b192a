// Package exchange provides the shared reservoir that sits between poolkit's
// per-P shards: a bounded, FIFO, multi-producer multi-consumer store of idle
// values behind the small [Exchange] interface.
//
// A value is parked with Park (which fails only when the exchange is full) and
// taken back with Unpark (which fails when no completed Park is available).
// Neither ever blocks, allocates, or calls user code, so both may be used from
// hot paths. Counts reports how many Parks and Unparks have succeeded, so a
// caller that wants those statistics need not pay a shared counter of its own
// on each call. Every implementation zeroes the slot it pops, so an exchange never
// retains a value it has handed back.
//
// Three implementations are offered:
//
//   - [Ring], made by [NewRing], is a lock-free bounded queue (Dmitry Vyukov's
//     bounded MPMC queue with per-slot sequence numbers, the design of
//     crossbeam's ArrayQueue). Park and Unpark cost one compare-and-swap and
//     one atomic store each and never wait for another goroutine. Its capacity
//     is rounded up to a power of two. Because it never waits, a goroutine
//     preempted in the middle of its own Park or Unpark can make a concurrent
//     call report "empty" or "full" transiently (see [Ring.Unpark] and
//     [Ring.Park]); no value is ever lost or delivered twice.
//   - [Mutex], made by [NewMutex], is a fixed-capacity circular buffer under a
//     sync.Mutex. Its answers are exact (linearizable); its cost is a lock
//     round trip per call, and a goroutine preempted while holding the lock
//     makes everyone else wait for it.
//   - [None] refuses every Park and is always empty. Use it to switch the
//     shared reservoir off, so that values overflowing a shard are dropped (or
//     closed) rather than shared.
//
// Which to choose: the measured trade-off between [Ring] and [Mutex] on the
// project's reference machine, and the resulting default ([KindRing]), are
// recorded in docs/decisions/0001-exchange.md: at or below GOMAXPROCS
// goroutines a [Mutex] round trip is cheaper on average, but above it a [Ring]'s
// tail latency is orders of magnitude lower (no goroutine waits for a
// preempted lock holder). [Ring] answers a transient "full" or "empty"
// while another caller is between claiming a slot and publishing it; its
// users treat those as a cheap miss (package pool sizes its ring one above
// MaxSize and keeps only hints in it; bytepool drops or allocates). Use
// [None] when values should stay on the P that released them.
//
// Memory model: for every implementation, a Park synchronizes before the
// Unpark that returns its value, so writes made to a value before it is parked
// are visible to the goroutine that unparks it.
package exchange
