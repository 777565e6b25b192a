//go:build race || poolkit_nolinkname

package shard

import "sync/atomic"

// guard is a try-lock around one stack. It is used where pinning cannot be
// relied on for exclusion: under the race detector (which cannot see it) and
// without P ids (poolkit_nolinkname). It never blocks: a caller that finds it
// taken treats the stack as full or empty, so no goroutine spins on a holder
// that was preempted.
type guard struct{ v atomic.Uint32 }

func (g *guard) lock() bool { return g.v.CompareAndSwap(0, 1) }
func (g *guard) unlock()    { g.v.Store(0) }

// word is an int owned by the holder of a stack's guard; other goroutines read
// it for Len and Stats. It is atomic in this build so that those reads are
// synchronised.
type word struct{ v atomic.Int64 }

func (w *word) load() int   { return int(w.v.Load()) }
func (w *word) store(v int) { w.v.Store(int64(v)) }
func (w *word) add(d int)   { w.v.Add(int64(d)) }

// begin returns the id of the caller's stack in a table of n stacks. It does
// not pin: exclusion comes from the stack's guard.
func begin(n int) int { return procID(n) }

func end() {}

// Enter returns -1, for which Local.Stack has no stack: in this build nothing
// is pinned, and Local.Pop and Local.Push go through the stacks' guards. See
// the default build's Enter.
func Enter() int { return -1 }

// Exit ends what Enter started.
func Exit() {}
