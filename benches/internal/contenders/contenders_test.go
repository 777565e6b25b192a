package contenders

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/benches/internal/cacheline"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestHoldersShareNoCacheLine checks that no two workers' holders — the
// holder and the array of its slots, both written on every op — have bytes
// in one 128-byte line, for every contender: otherwise two processors take
// the line from each other on every op, and the harness, not the pool, sets
// the figure.
func TestHoldersShareNoCacheLine(t *testing.T) {
	for _, c := range Pools() {
		for _, n := range []int{1, 2, 8} {
			t.Run(fmt.Sprintf("%s/Slots=%d", c.Name, n), func(t *testing.T) {
				p, err := c.New(PoolConfig{MaxSize: 8 * n})
				require.NoError(t, err)
				defer p.Close()
				owner := map[uintptr]int{}
				claim := func(w int, start, size uintptr) {
					for line := start / 128; line <= (start+size-1)/128; line++ {
						if o, ok := owner[line]; ok && o != w {
							t.Fatalf("workers %d and %d share the cache line at %#x", o, w, line*128)
						}
						owner[line] = w
					}
				}
				var hs []Holder
				defer func() { // before Close, which waits for what is held
					for _, h := range hs {
						h.ReleaseAll()
					}
				}()
				for w := range 8 {
					h := p.Holder(n)
					require.NoError(t, h.AcquireAll(context.Background()))
					hs = append(hs, h)
					start, size, slots, slotsSize := holderSpans(t, h)
					claim(w, start, size)
					claim(w, slots, slotsSize)
				}
			})
		}
	}
}

// holderSpans returns the address and size of h's fields (its pads left
// out: nothing writes them) and of its slots.
func holderSpans(t *testing.T, h Holder) (start, size, slots, slotsSize uintptr) {
	switch h := h.(type) {
	case *poolkitHolder:
		return spans(h, h.leases)
	case *poolkitKeyedHolder:
		return spans(h, h.leases)
	case *puddleHolder:
		return spans(h, h.res)
	case *connHolder:
		return spans(h, h.conns)
	}
	t.Fatalf("unknown holder %T", h)
	return
}

// spans is holderSpans for a holder h, padded before and after, and its slots.
func spans[H, E any](h *H, slots []E) (start, size, slotsStart, slotsSize uintptr) {
	const pad = unsafe.Sizeof(cacheline.Pad{})
	return uintptr(unsafe.Pointer(h)) + pad, unsafe.Sizeof(*h) - 2*pad,
		uintptr(unsafe.Pointer(unsafe.SliceData(slots))), uintptr(cap(slots)) * unsafe.Sizeof(*new(E))
}

// TestEveryGrowableUseReachesItsSize: every growable-buffer contender's
// buffer holds what it was written, whatever the size, use after use.
func TestEveryGrowableUseReachesItsSize(t *testing.T) {
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 32)
	for _, c := range GrowableContenders() {
		t.Run(c.Name, func(t *testing.T) {
			g, err := c.New()
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			for _, n := range []int{1, 511, 512, 513, 2 << 10, 100_000} {
				for range 3 {
					if got := g.Use(chunk, n); got < n {
						t.Fatalf("Use(%d): capacity %d", n, got)
					}
				}
			}
			if _, err := GrowableByName(c.Name); err != nil {
				t.Fatal(err)
			}
		})
	}
	if _, err := GrowableByName("nothing"); err == nil {
		t.Fatal("GrowableByName of an unknown name: no error")
	}
}

// TestFillWritesExactlyNBytes: fill writes n bytes, the chunk over and over.
func TestFillWritesExactlyNBytes(t *testing.T) {
	chunk := []byte("abc")
	for _, n := range []int{0, 1, 3, 4, 10} {
		var b bytes.Buffer
		fill(&b, chunk, n)
		if want := strings.Repeat("abc", 4)[:n]; b.String() != want {
			t.Fatalf("fill(%d) wrote %q, want %q", n, b.String(), want)
		}
	}
}
