package shard

import "unsafe"

// RandomIDs reports whether this build draws stack ids at random
// (poolkit_nolinkname).
const RandomIDs = randomIDs

// PushSpillAt files v in the spill of stack pid of the current table, as that
// P's owner would. Tests only: nothing else may use the Local meanwhile.
func (l *Local[T]) PushSpillAt(pid int, v T) bool {
	return l.cur.Load().shards[pid].sp.pushN([]T{v}) == 1
}

// StealAt steals from the spill of stack pid of the current table.
func (l *Local[T]) StealAt(pid int) (T, bool) { return l.cur.Load().shards[pid].sp.steal() }

// StartSpillAt makes the empty spill of stack pid start at position pos, so
// that tests can cross the wrap of the uint32 positions.
func (l *Local[T]) StartSpillAt(pid int, pos uint32) {
	sp := &l.cur.Load().shards[pid].sp
	mask := uint32(len(sp.cells) - 1)
	sp.headTail.Store(pack(pos, pos))
	for i := range sp.cells {
		sp.cells[i].free.Store(pos + (uint32(i)-pos)&mask)
	}
}

// Regions returns, for each stack of the current table, the byte ranges
// [start, end) of its slots and of its spill cells (empty without a spill).
func (l *Local[T]) Regions() (slots, spills [][2]uintptr) {
	for i := range l.cur.Load().shards {
		s := &l.cur.Load().shards[i]
		slots = append(slots, span(s.slots))
		spills = append(spills, span(s.sp.cells))
	}
	return slots, spills
}

func span[E any](s []E) [2]uintptr {
	if cap(s) == 0 {
		return [2]uintptr{}
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	return [2]uintptr{start, start + uintptr(cap(s))*unsafe.Sizeof(s[0])}
}
