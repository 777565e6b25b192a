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

// Built with poolkit_debug, a Buffer used after Free panics, whether it came
// from NewBuffer (whose header Free does not recycle in this build, so that
// a stale pointer never reaches the next holder's buffer) or was a zero
// Buffer; a second Free panics too.
func TestDebugBufferUsedAfterFreePanics(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{})
	uses := map[string]func(b *bytepool.Buffer){
		"Write":       func(b *bytepool.Buffer) { _, _ = b.Write([]byte("x")) },
		"WriteString": func(b *bytepool.Buffer) { _, _ = b.WriteString("x") },
		"WriteByte":   func(b *bytepool.Buffer) { _ = b.WriteByte('x') },
		"WriteRune":   func(b *bytepool.Buffer) { _, _ = b.WriteRune('é') },
		"Read":        func(b *bytepool.Buffer) { _, _ = b.Read(make([]byte, 1)) },
		"ReadByte":    func(b *bytepool.Buffer) { _, _ = b.ReadByte() },
		"Bytes":       func(b *bytepool.Buffer) { _ = b.Bytes() },
		"String":      func(b *bytepool.Buffer) { _ = b.String() },
		"Len":         func(b *bytepool.Buffer) { _ = b.Len() },
		"Cap":         func(b *bytepool.Buffer) { _ = b.Cap() },
		"Next":        func(b *bytepool.Buffer) { _ = b.Next(1) },
		"Grow":        func(b *bytepool.Buffer) { b.Grow(10) },
		"Reset":       func(b *bytepool.Buffer) { b.Reset() },
		"Truncate":    func(b *bytepool.Buffer) { b.Truncate(0) },
		"ReadFrom":    func(b *bytepool.Buffer) { _, _ = b.ReadFrom(strings.NewReader("x")) },
		"WriteTo":     func(b *bytepool.Buffer) { _, _ = b.WriteTo(&strings.Builder{}) },
		"Free":        func(b *bytepool.Buffer) { b.Free() },
	}
	for name, use := range uses {
		for _, kind := range []string{"NewBuffer", "zero"} {
			t.Run(kind+"/"+name, func(t *testing.T) {
				b := new(bytepool.Buffer)
				if kind == "NewBuffer" {
					b = p.NewBuffer(64)
				}
				_, _ = b.WriteString("hello")
				b.Free()
				defer func() {
					if r, _ := recover().(string); r != "bytepool: Buffer used after Free" {
						t.Fatalf("recover() = %q, want the use-after-Free panic", r)
					}
				}()
				use(b)
			})
		}
	}
	// A new Buffer from the pool is not a freed one.
	b := p.NewBuffer(8)
	_, _ = b.WriteString("fine")
	b.Free()
}
