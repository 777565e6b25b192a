//go:build linux

package bytepool

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"
)

// Mmap is an Allocator that takes each buffer from its own anonymous private
// mapping (mmap), outside the Go heap, optionally locked in RAM (mlock) so it
// is never swapped out. Make one with NewMmap. It is safe for concurrent use.
//
// Trade-off: the garbage collector neither sees nor paces this memory. It is
// not counted in the heap goal, so a pool with a large budget does not make
// the GC run more often, but nothing reclaims a buffer the program loses
// either: a buffer that is never Put back stays mapped until the process
// exits. Memory is given back to the kernel (munmap) exactly when the pool
// lets a buffer go: a Put dropped over the retention bound; Trim, or idle
// trimming at a GC cycle, draining an exchange; and the buffers of per-P
// stacks that Trim retired, through the stacks' drop callback, from the
// runtime cleanup that runs once those stacks are unreachable. When an
// unreachable Pool is collected, a runtime cleanup releases everything it
// retained the same way.
//
// Every allocation costs an mmap system call and at least one page, so this
// allocator suits large classes (Config.MinSize of 4 KiB or more); with
// smaller classes each buffer still occupies a whole page.
//
// Only slices it returned, with their original first element and capacity,
// are owned (Owns): a re-sliced or foreign slice is never unmapped.
type Mmap struct {
	lock bool
	mu   sync.Mutex
	// live maps the first address of each live mapping to its size.
	// Guarded by mu.
	live map[uintptr]int
}

// NewMmap returns an Mmap allocator; with lock set, each buffer is locked in
// RAM with mlock (subject to RLIMIT_MEMLOCK: a failure is reported by
// Allocate, and the pool then falls back to the Go heap for that buffer).
func NewMmap(lock bool) *Mmap {
	return &Mmap{lock: lock, live: make(map[uintptr]int)}
}

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
	m.mu.Lock()
	m.live[addr(b)] = cap(b)
	m.mu.Unlock()
	return b, nil
}

// Owns reports whether b starts at a live mapping of this allocator and has
// its capacity.
func (m *Mmap) Owns(b []byte) bool {
	if cap(b) == 0 {
		return false
	}
	m.mu.Lock()
	n, ok := m.live[addr(b)]
	m.mu.Unlock()
	return ok && n == cap(b)
}

// Free unmaps b if this allocator owns it, and does nothing otherwise.
func (m *Mmap) Free(b []byte) {
	if cap(b) == 0 {
		return
	}
	k := addr(b)
	m.mu.Lock()
	n, ok := m.live[k]
	if ok && n == cap(b) {
		delete(m.live, k)
	}
	m.mu.Unlock()
	if ok && n == cap(b) {
		// munmap also unlocks locked pages. It fails only on arguments
		// that did not come from Mmap, which the table rules out.
		if err := syscall.Munmap(b[:cap(b)]); err != nil {
			panic("bytepool: bug: munmap: " + err.Error())
		}
	}
}

// Mapped returns the number of bytes currently mapped by this allocator.
func (m *Mmap) Mapped() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var s int64
	for _, n := range m.live {
		s += int64(n)
	}
	return s
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
