// Package shard implements package [github.com/poolkit/poolkit/shard], the
// per-P (per-processor) stacks under pool and bytepool: see its
// documentation for [Local]'s contract. The public package wraps the
// operations a user can call safely; this one adds what only poolkit's own
// fast paths use, and its documentation covers only those and the
// mechanism.
//
// # Steps
//
// Local.Pop and Local.Push also come as steps ([Enter], [Local.Stack],
// [Stack.Pop] and [Stack.Push], [Local.PopSpill] and [Local.PushSpill],
// [Exit]) that a caller's own fast path inlines, as bytepool's Get and Put
// do. The code between Enter and Exit runs pinned and is leaf code (no user
// callbacks, no blocking, no sync.Mutex, no allocation, no panic); misuse (a
// Stack used unpinned, on another P, or after Exit) is not caught. That is
// why the steps are not in the public package. pool uses the stack alone;
// bytepool uses the spill too.
//
// # Build variants
//
// The current P comes from the runtime's procPin and procUnpin via go:linkname
// (package internal/pin). Three builds exist:
//
//   - default: each stack's guard is empty and its counters are plain words
//     (variant_pinned.go).
//   - race (the race detector is on): each stack is guarded by a try-lock (one
//     CAS) and its counters are atomic. Enter pins nothing and returns -1, so
//     every operation takes the slow path (variant_synced.go, id_linkname.go).
//   - poolkit_nolinkname: no P id at all. Each operation picks a cheap random
//     stack and guards it with the same try-lock; Local.Pop then looks through
//     the other stacks too, since a goroutine has no stack of its own
//     (variant_synced.go, id_random.go).
//
// # GOMAXPROCS changes
//
// The stacks are laid out by value in the per-P table, for one pointer fewer
// on the fast path, so a table cannot grow in place: when a P id beyond it
// shows up, a slow path (unpinned, under a mutex) replaces it exactly as
// Retire does. When GOMAXPROCS shrinks, stacks above the new limit are not
// lost: Retire drops them all. [Local.Grow] does that growth alone, for a
// caller of the steps that starts again pinned.
//
// # Draining
//
// [Local.DrainAll] empties a Local its owner no longer publishes, every P's
// stack and spill at once, and seals it: no table is published again, and
// Pop and Push keep and take nothing. In the default build its caller must
// have stopped the world after the switch, and stragglers must use the Local
// only inside the pinned section that loaded it; in the synchronised builds
// the seal takes each stack's guard for good, so a straggler's Push is over
// before the drain, which finds its value, or fails.
package shard
