//go:build !race && !poolkit_nolinkname

package shard

import "github.com/poolkit/poolkit/internal/pin"

// guard is the per-stack exclusion. In this build pinning is the exclusion: only
// the goroutine running on a P, while pinned, touches that P's stack, so guard
// is empty and its methods compile away.
type guard struct{}

func (*guard) lock() bool { return true }
func (*guard) unlock()    {}

// seal is the synchronised builds' seal. Here a drain's caller has made the
// stack its own by stopping the world (see Local.DrainAll): seal reports
// true.
func (*guard) seal() bool { return true }

// word is an int owned by one P. The owner reads and writes it plainly while
// pinned; Len and Stats read it from other goroutines without synchronisation.
// That read is a benign race: a word-sized aligned value is never torn and the
// Go memory model guarantees the reader sees some value that was written, so a
// sum of words is a slightly stale approximation and is documented as such.
// No decision is taken on it. (The race build makes word atomic.)
type word struct{ v int }

func (w *word) load() int   { return w.v }
func (w *word) store(v int) { w.v = v }
func (w *word) add(d int)   { w.v += d }

// begin pins the caller to its P and returns the P's id; n (the table size)
// is not needed here. Between begin and end the caller runs leaf code only.
func begin(int) int { return pin.Pin() }

// end ends what begin started.
func end() { pin.Unpin() }

// randomIDs reports whether stack ids are drawn at random (no P ids).
const randomIDs = false

// Enter pins the calling goroutine to its P, as sync.Pool does, and returns
// the P's id, for Local.Stack. Exit must follow, and the code in between is
// leaf code: no blocking, no locks, no channel operations, no allocation, no
// panic (a panic while pinned is a fatal error that recover cannot catch).
// One Enter may serve several Locals.
//
// In the synchronised builds (race, poolkit_nolinkname) Enter does not pin
// and returns -1, for which Local.Stack has no stack.
func Enter() int { return pin.Pin() }

// Exit ends what Enter started.
func Exit() { pin.Unpin() }
