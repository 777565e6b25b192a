// Package shard holds per-P (per-processor) stacks: the fast path under
// poolkit's pool and bytepool, for values that a goroutine puts back and
// takes again on the same P.
//
// A [Local] keeps one small LIFO stack per P. Push and Pop touch only the
// calling P's stack, with no lock and, in the default build, no atomic
// read-modify-write; they allocate nothing. A value pushed on one P's stack
// cannot be popped on another: a goroutine that migrates between its Push
// and Pop misses, as with [sync.Pool]. Unlike sync.Pool, a [Local] keeps what it
// holds across garbage collections, holds at most a fixed number of values,
// and hands the ones it discards to a function of the caller's (see
// [Local.Retire]).
//
// Made by [NewLocalSpill], a Local has a second tier per P, the spill: a
// Push on a full stack moves its oldest half there, and a Pop on an empty
// stack refills it from there, then takes from other Ps' spills. What sits
// in a spill is within every P's reach.
//
// # Build variants
//
// The current P comes from the runtime (procPin, through go:linkname, as
// sync.Pool uses it). Under the race detector, which cannot see that pinning
// makes a P's stack exclusive, and with the build tag poolkit_nolinkname (no
// P id: each operation picks a stack at random), each stack is guarded by a
// try-lock instead. The contract is the same in every build, with one
// addition there: an operation that finds the lock taken behaves as if the
// stack were full (Push) or empty (Pop).
//
// # GOMAXPROCS changes
//
// A Local sizes its per-P table from GOMAXPROCS. When a P id beyond it shows
// up, the table is replaced by a bigger one, as Retire replaces it: the old
// stacks' values go to the drop function, as sync.Pool drops its contents on
// such a change.
package shard
