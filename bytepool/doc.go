// Package bytepool is one pool for byte buffers of every size, from small
// messages to multi-MiB frames, on the same per-P fast path as poolkit's
// object pool.
//
// Buffers come in size classes from [Config.MinSize] (default 64 B) to
// [Config.MaxSize] (default 16 MiB), four per power of two (2^k × 5/4, 6/4,
// 7/4, 8/4), so that a buffer is at most a quarter larger than asked for.
// Each class has per-P tiers (one shard.Local: per P, an owner-only stack and
// a spill other Ps can steal from) and one exchange (a shared bounded FIFO):
// Get takes from the calling P's stack, then its spill, then another P's
// spill, then the exchange, then allocates; Put files on the calling P's
// stack (moving the older half of a full stack to the spill), then in
// larger per-P tiers if the byte budget has room, then in the exchange,
// then drops. Neither allocates: the per-P tiers hold each buffer's address
// and the exchange its slice header, never an interface.
//
//	b := bytepool.Get(n) // len n, cap ≥ n; contents unspecified
//	defer bytepool.Put(b) // b must not be used afterwards
//
// Retention is bounded by a byte budget ([Config.MaxRetained]) that follows
// demand: the classes in use grow their per-P tiers into what idle classes
// do not use, up to [Config.Depth] and [Config.Spill] per P. Unused memory is
// released at GC cycles without a goroutine ([Config.IdleTimeout],
// [Config.IdleCycles]); [Pool.Trim] releases it at once. [Buffer] is a growable
// buffer, read and written like a bytes.Buffer, drawing from a pool, that
// starts at the size its pool (or a [Sizer]) has learnt its Buffers reach.
//
// # Security
//
// A reused buffer holds what its previous holder wrote. Callers that handle
// secrets use [Pool.GetZeroed], or [Config.ZeroOnPut].
//
// # Debug builds
//
// Put accepts any slice, including slices the pool never gave out. Built with
// the tag poolkit_debug, a second Put of the same buffer before a Get handed it
// out again panics with a "bytepool: " message; the check keeps a table keyed
// by the address of each filed buffer, under a mutex, and is not compiled
// into other builds.
package bytepool
