package shard

import "sync/atomic"

// spill is one P's second tier in a Local made by NewLocalSpill: a bounded
// deque that the P's owner pushes and pops at the head (LIFO, like the stack
// in front of it) and that other Ps steal from at the tail (oldest first).
// It is the single-producer shape of sync.Pool's per-P dequeue: because only
// the owner pushes, a push publishes with one atomic add and a pop claims with
// one compare-and-swap, each for a batch of values (the owner moves half a
// stack in or out at a time); a steal claims one value with a
// compare-and-swap and frees the cell with an atomic store.
//
// Positions are uint32 counters that wrap: head is the next position the
// owner pushes, tail the oldest position not yet stolen, both packed in one
// word so that a single compare-and-swap arbitrates between the owner's pop
// of the last value and a stealer. Position p lives in cells[p&mask].
//
// Who touches what:
//   - v: written by the owner's push at position p, then read and zeroed by
//     whoever claims p: the owner's pop (claims by moving head down) or one
//     stealer (claims by moving tail up). The push's atomic add publishes v;
//     a claim's compare-and-swap acquires it.
//   - free: the position the cell may next be pushed at. Only a stealer
//     writes it (p+cap, once it has read and zeroed v, with an atomic store),
//     and the owner's push reads it: a cell whose stealer has claimed it but
//     not yet finished is treated as full, never waited for. An owner's pop
//     leaves free at p, where the owner pushes next.
//
// The owner's operations run with the stack's guard held (and pinned, in the
// default build), exactly as the stack's own; steals need no guard.
type spill[T any] struct {
	headTail atomic.Uint64 // head<<32 | tail
	cells    []spillCell[T]
	steals   word // values the owning P stole from other Ps' spills
}

type spillCell[T any] struct {
	v    T
	free atomic.Uint32
}

// init gives the spill its cells, a power of two of them.
func (sp *spill[T]) init(cells []spillCell[T]) {
	sp.cells = cells
	for i := range sp.cells {
		sp.cells[i].free.Store(uint32(i))
	}
}

func unpack(ht uint64) (head, tail uint32) { return uint32(ht >> 32), uint32(ht) }

func pack(head, tail uint32) uint64 { return uint64(head)<<32 | uint64(tail) }

// pushN files vs at the head, vs[0] first, as far as there is room, and
// returns how many it filed: vs[:n]. Owner only. One atomic add publishes
// them all.
func (sp *spill[T]) pushN(vs []T) (n int) {
	if len(sp.cells) == 0 {
		return 0
	}
	mask := uint32(len(sp.cells) - 1)
	head, tail := unpack(sp.headTail.Load())
	for ; n < len(vs); n++ {
		pos := head + uint32(n)
		if pos-tail > mask {
			break // full
		}
		c := &sp.cells[pos&mask]
		if c.free.Load() != pos {
			break // a stealer claimed this cell a lap ago and is still emptying it
		}
		c.v = vs[n]
	}
	if n > 0 {
		// Publishes vs[:n]; adding to the high half leaves tail unchanged,
		// and a head that wraps carries out of the word.
		sp.headTail.Add(uint64(n) << 32)
	}
	return n
}

// popN takes the newest values, as many as dst holds or the spill has, into
// dst oldest first, and returns how many: dst[:n], dst[n-1] the newest.
// Owner only. One compare-and-swap claims them all.
func (sp *spill[T]) popN(dst []T) int {
	pos, n := sp.claim(true, uint32(len(dst)))
	for i := range n {
		dst[i] = sp.take(pos + i)
	}
	return int(n)
}

// steal takes the oldest value. Any goroutine.
func (sp *spill[T]) steal() (v T, ok bool) {
	pos, n := sp.claim(false, 1)
	if n == 0 {
		return v, false
	}
	v = sp.take(pos)
	// Hands the cell back to the owner for its next lap.
	sp.cells[pos&uint32(len(sp.cells)-1)].free.Store(pos + uint32(len(sp.cells)))
	return v, true
}

// claim takes positions with one compare-and-swap: for the owner, the newest
// up to limit of them (moving head down); else the oldest one (moving tail
// up). It returns them as [pos, pos+n), n = 0 if the spill is empty (or
// limit is 0). Lock-free: a lost compare-and-swap means another taker made
// progress (the owner's fails only if a stealer moved tail), and it looks
// again.
func (sp *spill[T]) claim(owner bool, limit uint32) (pos, n uint32) {
	if len(sp.cells) == 0 || limit == 0 {
		return 0, 0
	}
	for {
		ht := sp.headTail.Load()
		head, tail := unpack(ht)
		if head == tail {
			return 0, 0
		}
		pos, n = tail, 1
		next := pack(head, tail+1)
		if owner {
			n = min(limit, head-tail)
			pos = head - n
			next = pack(pos, tail)
		}
		if sp.headTail.CompareAndSwap(ht, next) {
			return pos, n
		}
	}
}

// take reads and zeroes the cell of a position its caller claimed.
func (sp *spill[T]) take(pos uint32) T {
	c := &sp.cells[pos&uint32(len(sp.cells)-1)]
	v := c.v
	var zero T
	c.v = zero // retain nothing (DESIGN invariant 8)
	return v
}

// len returns the number of values held; a snapshot.
func (sp *spill[T]) len() int {
	head, tail := unpack(sp.headTail.Load())
	return int(head - tail)
}
