// Package cacheline holds the padding that keeps per-P and per-end state of the
// lock-free structures on cache lines of their own.
package cacheline

// Size is the padding unit: two 64-byte lines, because adjacent-line prefetch on
// x86 makes neighbours of a 64-byte line share traffic too (sync.Pool pads its
// per-P state to 128 bytes for the same reason).
const Size = 128

// Pad is Size bytes of padding.
type Pad [Size]byte
