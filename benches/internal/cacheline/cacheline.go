// Package cacheline is the benchmarks' padding: it keeps each worker's holder
// and slots on cache lines of their own, with the pool's own unit (the root
// module's internal/cacheline, which the benches, a module of their own, do
// not import), so that every contender is measured with the same margins.
package cacheline

import "unsafe"

// Size is the padding unit: two 64-byte lines, because adjacent-line prefetch on
// x86 makes neighbours of a 64-byte line share traffic too (sync.Pool pads its
// per-P state to 128 bytes for the same reason).
const Size = 128

// Pad is Size bytes of padding.
type Pad [Size]byte

// Carve returns parts slices of n elements each, cut from one array with at
// least Size bytes unused before the first, between any two and after the
// last: no two parts share a cache line, nor one of them a line with another
// allocation, wherever the allocator puts the array. Each slice's capacity
// is n, so an append cannot reach into a gap. Separate small arrays do not
// ensure it: the allocator puts two made one after the other side by side
// (decision 0009).
func Carve[E any](parts, n int) [][]E {
	size := max(int(unsafe.Sizeof(*new(E))), 1)
	gap := (Size + size - 1) / size
	stride := n + gap
	all := make([]E, gap+parts*stride)
	out := make([][]E, parts)
	for i := range out {
		at := gap + i*stride
		out[i] = all[at : at+n : at+n]
	}
	return out
}
