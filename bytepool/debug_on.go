//go:build poolkit_debug

package bytepool

import (
	"sync"
	"unsafe"
)

// debugTracking reports whether the double-Put table is compiled in.
const debugTracking = true

// filed is the set of buffers sitting in some pool (filed by Put and not yet
// handed out or dropped), keyed by the address of their first element. It is
// keyed by address, not by slice, so that it keeps nothing alive; every path
// that lets a filed buffer go (Get, drop, trim, a collected Pool) deletes its
// entry first, so an address in the set is never reused by another array.
var filed struct {
	mu  sync.Mutex
	set map[uintptr]struct{}
}

func key(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// debugOnPut panics if b is already filed: a second Put of a buffer before it
// was handed out again. Foreign slices are simply filed.
func debugOnPut(b []byte) {
	k := key(b)
	filed.mu.Lock()
	if _, dup := filed.set[k]; dup {
		filed.mu.Unlock()
		panic("bytepool: Put of a buffer that is already in the pool (double Put, or Put after Put without a Get in between)")
	}
	if filed.set == nil {
		filed.set = make(map[uintptr]struct{})
	}
	filed.set[k] = struct{}{}
	filed.mu.Unlock()
}

func debugOnGet(b []byte) { debugForget(b) }

func debugForget(b []byte) {
	k := key(b)
	filed.mu.Lock()
	delete(filed.set, k)
	filed.mu.Unlock()
}

// recycleHeaders says whether Buffer.Free gives a NewBuffer header back to
// its pool's cache: not in this build, so that a Buffer used after Free is
// always caught (a recycled header would be the next holder's, live).
const recycleHeaders = false

// bufferState is a Buffer's debug state: whether it was freed.
type bufferState struct{ freed bool }

// live panics if the Buffer was freed.
func (s *bufferState) live() {
	if s.freed {
		panic("bytepool: Buffer used after Free")
	}
}

func (s *bufferState) free()  { s.freed = true }
func (s *bufferState) reuse() { s.freed = false }
