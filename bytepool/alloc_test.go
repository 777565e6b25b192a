package bytepool_test

import (
	"testing"

	"github.com/poolkit/poolkit/bytepool"
)

func TestGetPutDoNotAllocate(t *testing.T) {
	forEachAllocator(t, func(t *testing.T, a allocator) {
		for _, kind := range []struct {
			name string
			ex   bytepool.ExchangeKind
		}{{"Ring", bytepool.ExchangeRing}, {"Mutex", bytepool.ExchangeMutex}, {"None", bytepool.ExchangeNone}} {
			t.Run("Exchange="+kind.name, func(t *testing.T) {
				p := newPool(t, a, bytepool.Config{Exchange: kind.ex})
				defer p.Trim()
				for _, n := range []int{1, 100, 4 << 10, 64 << 10, 1 << 20, 4 << 20} {
					p.Put(p.Get(n)) // warm: the class has a buffer
					if allocs := testing.AllocsPerRun(1000, func() {
						b := p.Get(n)
						b[0] = 1
						p.Put(b)
					}); allocs != 0 {
						t.Errorf("Get(%d)+Put: %v allocs/op, want 0", n, allocs)
					}
				}
			})
		}
	})
}

// TestPackageAndZeroPoolGetPutDoNotAllocate: the package-level Get and Put,
// and a zero Pool's, allocate nothing once warm, as a Pool from New.
func TestPackageAndZeroPoolGetPutDoNotAllocate(t *testing.T) {
	var zero bytepool.Pool
	for _, c := range []struct {
		name string
		get  func(int) []byte
		put  func([]byte)
		trim func()
	}{
		{"bytepool.Get", bytepool.Get, bytepool.Put, bytepool.Default().Trim},
		{"zero Pool", zero.Get, zero.Put, zero.Trim},
	} {
		for _, n := range []int{1, 100, 64 << 10, 1 << 20} {
			c.put(c.get(n)) // warm: the class has a buffer
			if allocs := testing.AllocsPerRun(1000, func() {
				b := c.get(n)
				b[0] = 1
				c.put(b)
			}); allocs != 0 {
				t.Errorf("%s(%d)+Put: %v allocs/op, want 0", c.name, n, allocs)
			}
		}
		c.trim()
	}
}

func TestPutOfForeignSliceDoesNotAllocate(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{})
	foreign := make([]byte, 10, 5000)
	if allocs := testing.AllocsPerRun(1000, func() {
		p.Put(foreign)
		_ = p.Get(4096)
	}); allocs != 0 {
		t.Errorf("Put(foreign)+Get: %v allocs/op, want 0", allocs)
	}
}

func TestBufferWritesDoNotAllocateOnceWarm(t *testing.T) {
	if !bytepool.RecycleHeaders {
		t.Skip("the poolkit_debug build does not recycle Buffer headers")
	}
	p := newPool(t, allocator{}, bytepool.Config{})
	if allocs := testing.AllocsPerRun(100, func() {
		b := p.NewBuffer(0)
		for range 100 {
			_, _ = b.WriteString("0123456789abcdef0123456789abcdef")
		}
		b.Free()
	}); allocs != 0 {
		t.Errorf("NewBuffer, writes, Free: %v allocs/op, want 0", allocs)
	}
}
