package bytepool_test

import (
	"sync"
	"testing"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/internal/testutil/ptest"
)

// TestIntegrityUnderConcurrency: goroutines fill each buffer with a pattern of
// their own and check it just before Put; a buffer handed to two holders at
// once shows up as a broken pattern (and, under -race, as a race).
func TestIntegrityUnderConcurrency(t *testing.T) {
	forEachAllocator(t, func(t *testing.T, a allocator) {
		for _, ex := range []bytepool.ExchangeKind{bytepool.ExchangeRing, bytepool.ExchangeMutex} {
			p := newPool(t, a, bytepool.Config{MinSize: 64, MaxSize: 64 << 10, Depth: 4, ExchangeCapacity: 8, Exchange: ex})
			iters := 3000
			if testing.Short() || ptest.Race {
				iters = 500
			}
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					sizes := []int{1, 100, 1000, 5000, 64 << 10, 70 << 10}
					held := make([][]byte, 0, 4)
					for i := range iters {
						pat := byte(g*31 + i)
						b := p.Get(sizes[(i+g)%len(sizes)])
						fill(b, pat)
						held = append(held, b)
						if len(held) == cap(held) || i%3 == 0 {
							for _, h := range held {
								if !check(h) {
									t.Errorf("goroutine %d: buffer of len %d changed while held", g, len(h))
									return
								}
								p.Put(h)
							}
							held = held[:0]
						}
					}
					for _, h := range held {
						p.Put(h)
					}
				})
			}
			wg.Wait()
			p.Trim()
		}
	})
}

// fill writes pat over b, with the first byte holding pat so that check can
// recover it; every 4 KiB page and the last byte are written.
func fill(b []byte, pat byte) {
	if len(b) == 0 {
		return
	}
	for i := 0; i < len(b); i += 512 {
		b[i] = pat + byte(i>>9)
	}
	b[len(b)-1] = pat ^ 0xFF
}

func check(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	if len(b) == 1 {
		return true
	}
	pat := b[0]
	for i := 0; i < len(b)-1; i += 512 {
		if b[i] != pat+byte(i>>9) {
			return false
		}
	}
	return b[len(b)-1] == pat^0xFF
}
