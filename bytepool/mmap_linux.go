//go:build linux

package bytepool

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// Mmap is an [Allocator] that takes each buffer from its own anonymous private
// mapping (mmap), outside the Go heap, optionally locked in RAM (mlock) so it
// is never swapped out. Make one with [NewMmap]. It is safe for concurrent use.
//
// Trade-off: the garbage collector neither sees nor paces this memory. It is
// not counted in the heap goal, so a pool with a large budget does not make
// the GC run more often, but nothing reclaims a buffer the program loses
// either: a buffer that is never Put back stays mapped until the process
// exits. Memory is given back to the kernel (munmap) when a pool lets a
// buffer go: a Put dropped over the retention bound, Trim, idle trimming at
// a GC cycle, and the runtime cleanup of a collected [Pool]. A mapping Put into
// another pool, whatever that pool's allocator, is unmapped by the Mmap that
// made it when that pool lets it go. How many bytes may stay mapped beyond
// the pool's MaxRetained, and for how long, is said on [Pool.Trim].
//
// Every allocation costs an mmap system call and at least one page, so this
// allocator suits large classes ([Config.MinSize] of 4 KiB or more); with
// smaller classes each buffer still occupies a whole page.
//
// Only slices it returned, with their original first element and capacity,
// are owned (Owns): a re-sliced or foreign slice is never unmapped.
type Mmap struct {
	lock   bool
	mapped atomic.Int64 // bytes of the live mappings made by this Mmap
}

// mappings is every live mapping of every Mmap, so that a pool can give a
// buffer back to the Mmap that made it (freeMapped) whichever pool it was
// Put into.
var mappings struct {
	mu sync.Mutex
	// live maps the first address of each live mapping to its size and
	// maker. Guarded by mu.
	live map[uintptr]mapping
	n    atomic.Int64 // len(live), read without mu to skip the lookup
}

type mapping struct {
	size int
	m    *Mmap
}

// NewMmap returns an [Mmap] allocator; with lock set, each buffer is locked in
// RAM with mlock (subject to RLIMIT_MEMLOCK: a failure is reported by
// Allocate, and the pool then falls back to the Go heap for that buffer).
func NewMmap(lock bool) *Mmap { return &Mmap{lock: lock} }

// Allocate maps size bytes of zeroed memory.
func (m *Mmap) Allocate(size int) ([]byte, error) {
	if size <= 0 {
		return nil, fmt.Errorf("bytepool: Mmap.Allocate: size %d", size)
	}
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("bytepool: mmap %d bytes: %w", size, err)
	}
	if m.lock {
		if err := syscall.Mlock(b); err != nil {
			_ = syscall.Munmap(b)
			return nil, fmt.Errorf("bytepool: mlock %d bytes: %w", size, err)
		}
	}
	mappings.mu.Lock()
	if mappings.live == nil {
		mappings.live = make(map[uintptr]mapping)
	}
	mappings.live[addr(b)] = mapping{cap(b), m}
	mappings.n.Add(1)
	mappings.mu.Unlock()
	m.mapped.Add(int64(cap(b)))
	return b, nil
}

// Owns reports whether b starts at a live mapping of this allocator and has
// its capacity.
func (m *Mmap) Owns(b []byte) bool {
	if cap(b) == 0 {
		return false
	}
	mappings.mu.Lock()
	mp, ok := mappings.live[addr(b)]
	mappings.mu.Unlock()
	return ok && mp == mapping{cap(b), m}
}

// Free unmaps b if this allocator owns it, and does nothing otherwise.
func (m *Mmap) Free(b []byte) { unmap(b, m) }

// Mapped returns the number of bytes currently mapped by this allocator.
func (m *Mmap) Mapped() int64 { return m.mapped.Load() }

// freeMapped unmaps b if it is exactly a live mapping of any Mmap, through
// that Mmap. Pools call it for the buffers they let go that their own
// allocator does not own.
func freeMapped(b []byte) {
	if mappings.n.Load() > 0 {
		unmap(b, nil)
	}
}

// unmap unmaps b if it is exactly a live mapping made by m (by any Mmap if
// m is nil).
func unmap(b []byte, m *Mmap) {
	if cap(b) == 0 {
		return
	}
	k := addr(b)
	mappings.mu.Lock()
	mp, ok := mappings.live[k]
	ok = ok && mp.size == cap(b) && (m == nil || mp.m == m)
	if ok {
		delete(mappings.live, k)
		mappings.n.Add(-1)
	}
	mappings.mu.Unlock()
	if !ok {
		return
	}
	mp.m.mapped.Add(-int64(mp.size))
	// munmap also unlocks locked pages. It fails only on arguments that did
	// not come from Mmap, which the table rules out.
	if err := syscall.Munmap(b[:cap(b)]); err != nil {
		panic("bytepool: bug: munmap: " + err.Error())
	}
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
