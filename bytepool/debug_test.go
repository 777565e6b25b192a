//go:build poolkit_debug

package bytepool_test

import (
	"strings"
	"testing"

	"github.com/poolkit/poolkit/bytepool"
)

func mustPanicDoublePut(t *testing.T, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r, _ := recover().(string)
		if !strings.HasPrefix(r, "bytepool: ") || !strings.Contains(r, "double Put") {
			t.Fatalf("recover() = %q, want a bytepool: double Put panic", r)
		}
	}()
	f()
}

func TestDebugDoublePutPanics(t *testing.T) {
	forEachAllocator(t, func(t *testing.T, a allocator) {
		p := newPool(t, a, bytepool.Config{})
		b := p.Get(1000)
		p.Put(b)
		mustPanicDoublePut(t, func() { p.Put(b) })
		// Handed out again: a Put is fine once more.
		c := p.Get(1000)
		p.Put(c)
		p.Trim()
	})
}

func TestDebugDoublePutAcrossPoolsPanics(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{})
	q := newPool(t, allocator{}, bytepool.Config{})
	b := p.Get(1000)
	p.Put(b)
	mustPanicDoublePut(t, func() { q.Put(b) })
	p.Trim()
	q.Trim()
}

func TestDebugForeignSlicesAccepted(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{})
	for range 100 {
		p.Put(make([]byte, 0, 4096))
	}
	p.Trim() // room for f
	f := make([]byte, 5000)
	p.Put(f)
	mustPanicDoublePut(t, func() { p.Put(f) }) // filed foreign slices are tracked too
	p.Trim()
}

func TestDebugDroppedBufferIsForgotten(t *testing.T) {
	// A budget of one byte retains nothing: every Put drops its buffer, and
	// a dropped buffer is forgotten at once (its array may be collected and
	// its address reused, so it must not stay in the table).
	p := newPool(t, allocator{}, bytepool.Config{MaxRetained: 1})
	b := p.Get(100)
	for range 3 {
		p.Put(b)
	}
	if s := p.Stats(); s.Drops != 3 {
		t.Fatalf("Drops %d, want 3", s.Drops)
	}
}
