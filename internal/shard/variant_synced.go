//go:build race || poolkit_nolinkname

package shard

import (
	"runtime"
	"sync/atomic"
)

// guard is a try-lock around one stack. It is used where pinning cannot be
// relied on for exclusion: under the race detector (which cannot see it) and
// without P ids (poolkit_nolinkname). It never blocks: a caller that finds it
// taken treats the stack as full or empty, so no goroutine spins on a holder
// that was preempted. A drain seals it: takes it for good.
type guard struct{ v atomic.Uint32 }

// The states of a guard.
const (
	guardFree   = 0
	guardHeld   = 1
	guardSealed = 2 // taken for good by a drain (seal)
)

func (g *guard) lock() bool { return g.v.CompareAndSwap(guardFree, guardHeld) }
func (g *guard) unlock()    { g.v.Store(guardFree) }

// seal takes the guard for good, for a drain of its stack: it waits for a
// holder to let go (only a straggler that loaded the table being drained
// can hold it), then keeps it, so that every later lock fails and the stack
// takes nothing more. A holder from before the seal has left the stack when
// seal returns, so the drain finds what it put there. seal reports false if
// the guard was sealed already.
func (g *guard) seal() bool {
	for !g.v.CompareAndSwap(guardFree, guardSealed) {
		if g.v.Load() == guardSealed {
			return false
		}
		runtime.Gosched()
	}
	return true
}

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
