// Package shard holds per-P (per-processor) stacks: the fast path under
// poolkit's pool and bytepool.
//
// Two kinds, because the two faces need different guarantees:
//
//   - [Local] is owner-only. Each P's stack is touched only by the goroutine
//     running on that P, while pinned, with no atomic read-modify-write. A value
//     that sits on another P's stack is out of reach. Made by [NewLocalSpill], it
//     has a second tier per P, the spill, into which the owner moves the
//     oldest half of a full stack and from which it refills an empty one,
//     one atomic operation per move, and that other Ps steal from (bytepool's burst and cross-P path);
//     pool uses the stack alone. It is emptied as a whole by [Local.Retire].
//     Its Pop and Push also come as steps ([Enter], [Local.Stack], [Stack.Pop]
//     and [Stack.Push], [Local.PopSpill] and [Local.PushSpill], [Exit]) that
//     a caller's own fast path inlines, as bytepool's does.
//   - [Stealable] lets any P take from any other P's stack, so that a connection
//     pool at its maximum never waits while an idle object sits on another P.
//     Each push or pop costs one atomic read-modify-write on the P's own cache
//     line; a per-table occupancy bitmap tells stealers which stacks may hold
//     something, so stealing does not probe every P.
//
// Both have a small fixed depth, are LIFO for the owner, keep each P's state on
// cache lines of its own and allocate nothing per operation.
//
// # Build variants
//
// The current P comes from the runtime's procPin and procUnpin via go:linkname.
// Three builds exist:
//
//   - default: the fast path described above. Code that runs pinned is leaf code
//     (no user callbacks, no blocking, no sync.Mutex, no panic).
//   - race (the race detector is on): the race detector cannot see that pinning
//     makes a P's stack exclusive, so each stack is guarded by a try-lock (one
//     CAS) and its counters are atomic. The contract is the same: an operation
//     that finds the lock taken behaves as if the stack were full (Push) or empty
//     (Pop).
//   - poolkit_nolinkname: no P id at all. Each operation picks a cheap random
//     stack and guards it with the same try-lock; Local.Pop then looks through
//     the other stacks too, since a goroutine has no stack of its own.
//
// # GOMAXPROCS changes
//
// Each kind sizes its per-P table from GOMAXPROCS and replaces it on a slow
// path (unpinned, under a mutex) when a P id beyond it shows up. Stealable
// keeps every existing stack in the bigger table; Local, whose stacks are laid
// out by value for one pointer fewer on the fast path, retires the old table
// exactly as Retire does (its values reach the drop function), as sync.Pool
// drops its contents on such a change. When GOMAXPROCS shrinks, stacks above
// the new limit are not lost: Stealable's Steal, Drain and Len visit every
// allocated stack, and Local's Retire drops them all.
package shard
