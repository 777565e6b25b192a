package pool

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// counters are the slow-path counters: shared atomics, touched only off the
// fast path (the fast path's counts come from the shard's per-P counters).
type counters struct {
	xhits, steals, handoffs atomic.Uint64
	// acqOther counts acquires served by anything but a local hint or a
	// hand-off (handoffs counts those, one add per hand-off);
	// localMiss, objects claimed through a local hint that were not handed
	// out (failed checks, or taken for a waiter); stale, local hints whose
	// object was held.
	acqOther, localMiss, stale atomic.Uint64
	connects, connectErrs      atomic.Uint64
	closeErrs                  atomic.Uint64
	created, detached          atomic.Uint64
	waits, timeouts, cancels   atomic.Uint64
	closed                     [nReasons]atomic.Uint64
	waitHist                   waitHist
	leaks, healthChecks        atomic.Uint64
	// acquires and localHits hold the highest Acquires and LocalHits
	// reported (see monotonic).
	acquires, localHits monotonic
}

// Stats is a snapshot of a pool's gauges and counters. The slot counts —
// Live, Connecting, Closing, Created, Closed (and its reasons) and Detached —
// are read together, at one instant, so every snapshot satisfies
// Created − Closed − Detached == Live − Connecting. Idle (and so Leased) is
// approximate under concurrency: it counts the idle objects one by one,
// without stopping anything. Counters are cumulative.
type Stats struct {
	MaxSize    int
	Live       int // idle + leased + connecting + closing: exact at the instant it is read
	Idle       int // approximate; objects under a background health check count as idle
	Leased     int // Live - Idle - Connecting - Closing, clamped at 0
	Connecting int // slots reserved for a connect whose Manager.Connect has not returned
	Closing    int // waiting for, or in, Manager.Close: they keep their slots until it returns
	Waiting    int

	Acquires      uint64 // successful Acquire and TryAcquire calls
	Connects      uint64 // Manager.Connect attempts
	ConnectErrors uint64 // failed connects, those that panicked included (see PanicError)
	CloseErrors   uint64 // Manager.Close calls that returned an error or panicked
	Created       uint64 // successful connects
	Detached      uint64
	Waits         uint64 // Acquires that queued
	Timeouts      uint64 // Acquires ended by a deadline (ctx's, AcquireTimeout, or a connect past ConnectTimeout)
	Cancels       uint64 // Acquires ended by a cancellation of their context

	// Blocked counts the Acquires that could not be served at once and
	// connected or queued, whatever their outcome: the count of the wait
	// histogram. (The others took an idle object: no wait worth a bucket.)
	Blocked uint64
	// WaitBuckets is the histogram of the time the Blocked acquires took,
	// from the start of their connect or wait to their return: cumulative
	// counts, WaitBuckets[i] those that took at most 1µs << i (up to about
	// 8.4s); Blocked is the +Inf bucket.
	WaitBuckets  [numWaitBuckets]uint64
	BlockedTime  time.Duration // the sum of the Blocked acquires' times
	Leaks        uint64        // leases reported held longer than LeakThreshold
	HealthChecks uint64        // background health checks run (ClosedBy[CloseHealthCheck] of them failed)

	// Closed counts the objects whose Manager.Close has returned (Closing
	// counts those still queued or in it); ClosedBy splits it by
	// CloseReason: ClosedBy[CloseIdle] were idle longer than MaxIdleTime,
	// and so on ([0] is unused; the reasons run to len(ClosedBy)-1). An
	// exporter loops over it, so a new reason needs no new field.
	Closed   uint64
	ClosedBy [nReasons]uint64
}

// Stats returns a snapshot of the pool's gauges and counters. It is always
// on; the fast path pays nothing for it beyond the shard's per-P counters.
func (p *Pool[T]) Stats() Stats {
	c := &p.counters
	sl := p.readSlots()
	s := Stats{
		MaxSize:       int(p.maxSize.Load()),
		Live:          int(sl.live),
		Idle:          p.idleLen() + int(p.checking.Load()),
		Connecting:    int(sl.connecting),
		Closing:       int(sl.closing),
		Waiting:       int(p.state.Load() & waiterMask),
		Connects:      c.connects.Load(),
		ConnectErrors: c.connectErrs.Load(),
		CloseErrors:   c.closeErrs.Load(),
		Created:       sl.created,
		Detached:      sl.detached,
		Waits:         c.waits.Load(),
		Timeouts:      c.timeouts.Load(),
		Cancels:       c.cancels.Load(),

		Closed:       sl.closedN,
		Leaks:        c.leaks.Load(),
		HealthChecks: c.healthChecks.Load(),
	}
	s.ClosedBy = sl.closed
	s.WaitBuckets, s.Blocked = c.waitHist.read()
	s.BlockedTime = time.Duration(c.waitHist.sum.Load())
	s.Leased = max(s.Live-s.Idle-s.Connecting-s.Closing, 0)
	a := int64(p.localHits()+c.acqOther.Load()+c.handoffs.Load()) - int64(c.localMiss.Load())
	s.Acquires = c.acquires.rise(uint64(max(a, 0)))
	return s
}

// localHits counts the objects claimed through a hint on their acquirer's
// per-P stack (a popped hint whose object was held is not one). It only
// rises (see monotonic).
func (p *Pool[T]) localHits() uint64 {
	return p.counters.localHits.rise(uint64(max(int64(p.local.Load().Stats().Hits)-int64(p.counters.stale.Load()), 0)))
}

// monotonic makes a derived count only rise. Acquires and LocalHits are
// derived from the per-P stacks' pop counters, which count a pop as it
// happens, minus the pops that did not become acquires (a stale hint, a
// failed check, an object taken for a waiter), which are counted only once
// known: a snapshot taken in between counts such a pop, and the next would
// count one fewer, which a Prometheus scrape reads as a counter reset. A
// snapshot reports the highest count reported so far instead: ahead of the
// truth, while it lasts, by at most the pops that were undecided at that
// highest snapshot, until real acquires overtake it.
type monotonic struct{ v atomic.Uint64 }

// rise reports the larger of n and the highest value reported before, and
// keeps it.
func (m *monotonic) rise(n uint64) uint64 {
	for {
		old := m.v.Load()
		if n <= old {
			return old
		}
		if m.v.CompareAndSwap(old, n) {
			return n
		}
	}
}

// numWaitBuckets is the number of buckets of [Stats.WaitBuckets].
const numWaitBuckets = 24

// waitHist is a histogram of the time Acquires spent blocked (connecting or
// queued), in log2 buckets of microseconds: an observation is two atomic
// adds (its bucket, the sum), and Stats sums the buckets into cumulative
// counts. The last counter collects what exceeds the last bound.
type waitHist struct {
	n   [numWaitBuckets + 1]atomic.Uint64
	sum atomic.Int64 // ns
}

func (h *waitHist) observe(d time.Duration) {
	i := 0
	if d > time.Microsecond {
		// d in (2^(i-1), 2^i] µs lands in bucket i.
		i = bits.Len64(uint64(d-1) / uint64(time.Microsecond))
	}
	h.n[min(i, numWaitBuckets)].Add(1)
	h.sum.Add(int64(d))
}

// read returns the cumulative counts and the total.
func (h *waitHist) read() (c [numWaitBuckets]uint64, total uint64) {
	for i := range h.n {
		total += h.n[i].Load()
		if i < numWaitBuckets {
			c[i] = total
		}
	}
	return c, total
}

// add adds o's figures to s, all but MaxSize: a keyed pool's totals are
// its keys' (see Keyed.Stats). Every figure is a count or a sum, so the
// totals keep each snapshot's Created − Closed − Detached == Live −
// Connecting.
func (s *Stats) add(o Stats) {
	s.Live += o.Live
	s.Idle += o.Idle
	s.Leased += o.Leased
	s.Connecting += o.Connecting
	s.Closing += o.Closing
	s.Waiting += o.Waiting
	s.Acquires += o.Acquires
	s.Connects += o.Connects
	s.ConnectErrors += o.ConnectErrors
	s.CloseErrors += o.CloseErrors
	s.Created += o.Created
	s.Detached += o.Detached
	s.Waits += o.Waits
	s.Timeouts += o.Timeouts
	s.Cancels += o.Cancels
	s.Blocked += o.Blocked
	for i := range s.WaitBuckets {
		s.WaitBuckets[i] += o.WaitBuckets[i]
	}
	s.BlockedTime += o.BlockedTime
	s.Leaks += o.Leaks
	s.HealthChecks += o.HealthChecks
	s.Closed += o.Closed
	for i := range s.ClosedBy {
		s.ClosedBy[i] += o.ClosedBy[i]
	}
}
