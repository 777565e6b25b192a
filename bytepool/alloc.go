package bytepool

// Allocator makes and frees the buffers of the size classes on the cold path
// (a Get that finds nothing to reuse, a Put or trim that drops a buffer). It
// is not used for Get above MaxSize, which always calls make.
//
// Implementations must be safe for concurrent use. The pool never calls them
// while pinned to a P.
//
// A pool gives a buffer it lets go to its own allocator if that owns it,
// else to the [Mmap] that mapped it, if any (a buffer Put into a pool other
// than the one that allocated it); any other buffer is left to the garbage
// collector, so a buffer from an Allocator of another kind must be Put into
// a pool that uses that Allocator.
type Allocator interface {
	// Allocate returns a slice with len and cap equal to size, or an error;
	// on error the pool falls back to make([]byte, size) and counts the
	// failure in Stats.AllocFailures.
	Allocate(size int) ([]byte, error)
	// Owns reports whether b is exactly a slice this allocator returned and
	// has not freed: same first element, same capacity. A foreign slice, or a
	// re-sliced one, is not owned and is never passed to Free.
	Owns(b []byte) bool
	// Free gives b back. The pool calls it only on slices for which Owns
	// reported true, once per allocation, when it drops or trims the buffer.
	Free(b []byte)
}

// Heap is the default [Allocator]: make on the Go heap. It owns nothing, so
// dropped buffers are left to the garbage collector.
type Heap struct{}

// Allocate returns make([]byte, size).
func (Heap) Allocate(size int) ([]byte, error) { return make([]byte, size), nil }

// Owns reports false: heap memory is the garbage collector's.
func (Heap) Owns([]byte) bool { return false }

// Free does nothing.
func (Heap) Free([]byte) {}
