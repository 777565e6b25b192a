// Package shard implements poolkit's per-P (per-processor) stacks, the fast
// path under pool and bytepool. The public package
// github.com/poolkit/poolkit/shard wraps what a user can use safely; this
// package adds what only poolkit's own fast paths use.
//
// [Local] is owner-only. Each P's stack is touched only by the goroutine
// running on that P, while pinned, with no atomic read-modify-write. Made by
// [NewLocalSpill], it has a second tier per P, the spill, into which the
// owner moves the oldest half of a full stack and from which it refills an
// empty one, one atomic operation per move, and that other Ps steal from
// (bytepool's burst and cross-P path); pool uses the stack alone. It is
// emptied as a whole by [Local.Retire]. It has a small fixed depth, is LIFO
// for the owner, keeps each P's state on cache lines of its own and
// allocates nothing per operation.
//
// # Steps
//
// Local.Pop and Local.Push also come as steps ([Enter], [Local.Stack],
// [Stack.Pop] and [Stack.Push], [Local.PopSpill] and [Local.PushSpill],
// [Exit]) that a caller's own fast path inlines, as bytepool's Get and Put
// do. The code between Enter and Exit runs pinned and is leaf code (no user
// callbacks, no blocking, no sync.Mutex, no allocation, no panic); misuse (a
// Stack used unpinned, on another P, or after Exit) is not caught. That is
// why the steps are not in the public package.
//
// # Build variants
//
// The current P comes from the runtime's procPin and procUnpin via go:linkname
// (package internal/pin). Three builds exist:
//
//   - default: the fast path described above; each stack's guard is empty and
//     its counters are plain words (variant_pinned.go).
//   - race (the race detector is on): the race detector cannot see that pinning
//     makes a P's stack exclusive, so each stack is guarded by a try-lock (one
//     CAS) and its counters are atomic. The contract is the same: an operation
//     that finds the lock taken behaves as if the stack were full (Push) or empty
//     (Pop). Enter pins nothing and returns -1, so every operation takes the
//     slow path (variant_synced.go, id_linkname.go).
//   - poolkit_nolinkname: no P id at all. Each operation picks a cheap random
//     stack and guards it with the same try-lock; Local.Pop then looks through
//     the other stacks too, since a goroutine has no stack of its own
//     (variant_synced.go, id_random.go).
//
// # GOMAXPROCS changes
//
// A Local sizes its per-P table from GOMAXPROCS and replaces it on a slow
// path (unpinned, under a mutex) when a P id beyond it shows up. The stacks
// are laid out by value for one pointer fewer on the fast path, so the old
// table is retired exactly as Retire does (its values reach the drop
// function), as sync.Pool drops its contents on such a change. When
// GOMAXPROCS shrinks, stacks above the new limit are not lost: Retire drops
// them all.
package shard
