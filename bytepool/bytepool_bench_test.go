package bytepool_test

import (
	"math/bits"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/internal/shard"
)

// Benchmarks compare, in the same binary, three implementations behind one
// small interface:
//
//   - poolkit: a bytepool.Pool (default Config unless the name says
//     otherwise);
//   - syncpool: one sync.Pool of *[]byte per size class, the usual
//     zero-allocation idiom (the caller keeps the pointer with the slice);
//   - make: a fresh make([]byte, n) each time, left to the GC.
//
// Every poolkit figure reports the bytes the pool retains at the end
// (retained-B); the sync.Pool figure cannot: sync.Pool does not say.

// sink makes buffers escape, as they do in real programs.
var sink []byte

type impl interface {
	get(n int) ([]byte, *[]byte)
	put(b []byte, h *[]byte)
	report(b *testing.B)
}

type poolkitImpl struct{ p *bytepool.Pool }

func (i poolkitImpl) get(n int) ([]byte, *[]byte) { return i.p.Get(n), nil }
func (i poolkitImpl) put(b []byte, _ *[]byte)     { i.p.Put(b) }
func (i poolkitImpl) report(b *testing.B) {
	b.ReportMetric(float64(i.p.Stats().Retained), "retained-B")
}

// syncPools is one sync.Pool per power-of-two class, 64 B … 16 MiB, like the
// classes of the default bytepool.
type syncPools struct{ pools [19]sync.Pool }

func newSyncPools() *syncPools {
	s := &syncPools{}
	for k := range s.pools {
		size := 64 << k
		s.pools[k].New = func() any {
			b := make([]byte, size)
			return &b
		}
	}
	return s
}

func syncClass(n int) int {
	if n <= 64 {
		return 0
	}
	return bits.Len(uint(n-1)) - 6
}

func (s *syncPools) get(n int) ([]byte, *[]byte) {
	h := s.pools[syncClass(n)].Get().(*[]byte)
	return (*h)[:n], h
}

func (s *syncPools) put(b []byte, h *[]byte) {
	*h = b
	s.pools[syncClass(cap(b))].Put(h)
}

func (s *syncPools) report(*testing.B) {}

type makeImpl struct{}

func (makeImpl) get(n int) ([]byte, *[]byte) { return make([]byte, n), nil }
func (makeImpl) put([]byte, *[]byte)         {}
func (makeImpl) report(b *testing.B)         { b.ReportMetric(0, "retained-B") }

func newPoolkit(b *testing.B, cfg bytepool.Config) poolkitImpl {
	p, err := bytepool.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return poolkitImpl{p}
}

type contender struct {
	name string
	make func(b *testing.B) impl
}

func contenders() []contender {
	return []contender{
		{"poolkit", func(b *testing.B) impl { return newPoolkit(b, bytepool.Config{}) }},
		{"syncpool", func(*testing.B) impl { return newSyncPools() }},
		{"make", func(*testing.B) impl { return makeImpl{} }},
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}

// warm gets k buffers of size n and puts them back, so that every
// contender starts from its steady state rather than from empty.
func warm(im impl, n, k int) {
	bufs := make([][]byte, k)
	hs := make([]*[]byte, k)
	for i := range k {
		bufs[i], hs[i] = im.get(n)
	}
	for i := range k {
		im.put(bufs[i], hs[i])
	}
}

// touch writes one byte per 4 KiB page.
func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = byte(i)
	}
}

func BenchmarkBytes(b *testing.B) {
	b.Run("HotPath", benchHotPath)
	b.Run("Realistic", benchRealistic)
	b.Run("Mixed", benchMixed)
	b.Run("Burst", benchBurst)
	b.Run("BurstSpread", benchBurstSpread)
	b.Run("StatsOverhead", benchStatsOverhead)
}

// benchHotPath: Get + Put of one size, no page writes (make's buffer does
// escape, or the compiler could keep it off the heap).
func benchHotPath(b *testing.B) {
	for _, n := range []int{4 << 10, 64 << 10, 1 << 20, 4 << 20} {
		for _, c := range contenders() {
			b.Run("Size="+sizeName(n)+"/Impl="+c.name, func(b *testing.B) {
				im := c.make(b)
				warm(im, n, 1)
				b.ReportAllocs()
				for b.Loop() {
					buf, h := im.get(n)
					buf[0] = 1
					sink = buf
					im.put(buf, h)
				}
				sink = nil
				im.report(b)
			})
		}
	}
}

// benchRealistic: 64 KiB, one write per 4 KiB page, the buffer escapes; one
// goroutine and RunParallel.
func benchRealistic(b *testing.B) {
	const n = 64 << 10
	for _, par := range []bool{false, true} {
		mode := "Goroutines=1"
		if par {
			mode = "Parallel"
		}
		for _, c := range contenders() {
			b.Run(mode+"/Size=64KiB/Impl="+c.name, func(b *testing.B) {
				im := c.make(b)
				warm(im, n, 2)
				b.ReportAllocs()
				if !par {
					for b.Loop() {
						buf, h := im.get(n)
						touch(buf)
						sink = buf
						im.put(buf, h)
					}
				} else {
					var mu sync.Mutex
					b.RunParallel(func(pb *testing.PB) {
						var local []byte
						for pb.Next() {
							buf, h := im.get(n)
							touch(buf)
							local = buf
							im.put(buf, h)
						}
						mu.Lock()
						sink = local
						mu.Unlock()
					})
				}
				sink = nil
				im.report(b)
			})
		}
	}
}

// mixedSizes are the seven sizes of the mixed workloads.
var mixedSizes = [7]int{256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20}

// zipfSeq is a precomputed Zipf-distributed sequence of indexes into
// mixedSizes, biased towards small sizes.
var zipfSeq = func() []uint8 {
	z := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.2, 1, uint64(len(mixedSizes)-1))
	s := make([]uint8, 4096)
	for i := range s {
		s[i] = uint8(z.Uint64())
	}
	return s
}()

func benchMixed(b *testing.B) {
	for _, mix := range []string{"RoundRobin", "Zipf"} {
		for _, c := range contenders() {
			b.Run("Mix="+mix+"/Impl="+c.name, func(b *testing.B) {
				im := c.make(b)
				for _, n := range mixedSizes {
					warm(im, n, 1)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					var n int
					if mix == "Zipf" {
						n = mixedSizes[zipfSeq[i%len(zipfSeq)]]
					} else {
						n = mixedSizes[i%len(mixedSizes)]
					}
					i++
					buf, h := im.get(n)
					buf[0] = 1
					sink = buf
					im.put(buf, h)
				}
				sink = nil
				im.report(b)
			})
		}
	}
}

// benchBurst: get N × 64 KiB (one write per page), then put all N. The
// default pool's 64 KiB class keeps 8 buffers per P on the stack, 128 per P
// in the spill and 64 in the exchange (Stats.Classes), so N = 1000 does not
// fit it; poolkit-sized (Spill 1024, a 2 GiB budget) is a pool sized for that
// burst: its 64 KiB class keeps 8 + 1024 per P and 64 in the exchange.
func benchBurst(b *testing.B) {
	cs := append(contenders()[:1:1], contender{"poolkit-sized", func(b *testing.B) impl {
		return newPoolkit(b, bytepool.Config{Spill: 1024, MaxRetained: 2 << 30})
	}})
	cs = append(cs, contenders()[1:]...)
	for _, burst := range []int{10, 100, 1000} {
		for _, c := range cs {
			runBurst(b, c, burst, func(buf []byte, _ int) { touch(buf) })
		}
	}
}

// runBurst runs one Burst row: get burst × 64 KiB, writing each with
// write(buf, j), then put them all.
func runBurst(b *testing.B, c contender, burst int, write func(buf []byte, j int)) {
	const n = 64 << 10
	b.Run("N="+strconv.Itoa(burst)+"/Size=64KiB/Impl="+c.name, func(b *testing.B) {
		im := c.make(b)
		warm(im, n, burst)
		bufs := make([][]byte, burst)
		hs := make([]*[]byte, burst)
		b.ReportAllocs()
		for b.Loop() {
			for j := range bufs {
				bufs[j], hs[j] = im.get(n)
				write(bufs[j], j)
			}
			sink = bufs[burst-1]
			for j := range bufs {
				im.put(bufs[j], hs[j])
				bufs[j], hs[j] = nil, nil
			}
		}
		sink = nil
		im.report(b)
	})
}

// touchSpread writes one byte per 4 KiB page, as touch does, but at page
// offset 64×(j mod 64) for the j-th buffer of a burst instead of always at
// offset 0.
func touchSpread(b []byte, j int) {
	for i := 64 * (j % 64); i < len(b); i += 4096 {
		b[i] = byte(i)
	}
}

// benchBurstSpread is benchBurst (N = 10 and 100) with touchSpread: a
// diagnostic, not a replacement. With touch, every write of a burst lands at
// page offset 0, hence in one L1 cache set; on the machine of decision 0005
// that costs about three times more when no locked instruction runs between
// the buffers, and sync.Pool's Get runs one (a CAS), so the Burst rows measure
// that effect more than the pools (docs/decisions/0005-bytepool.md,
// "Bursts"). poolkit-deep is Config{Depth: 128}: the whole burst stays on the
// per-P stack.
func benchBurstSpread(b *testing.B) {
	cs := []contender{
		contenders()[0],
		{"poolkit-deep", func(b *testing.B) impl { return newPoolkit(b, bytepool.Config{Depth: 128}) }},
		contenders()[1],
	}
	for _, burst := range []int{10, 100} {
		for _, c := range cs {
			runBurst(b, c, burst, touchSpread)
		}
	}
}

// benchStatsOverhead: the 64 KiB hot path of the pool (whose only hot
// counter is the hit count shard.Local keeps per P), the same while another
// goroutine reads Stats every 100 µs, and two floors written the same way
// (direct calls, no impl interface): shard.Local Pop + Push alone, which
// includes that counter, and one sync.Pool of *[]byte.
func benchStatsOverhead(b *testing.B) {
	const n = 64 << 10
	for _, mode := range []string{"Stats=counted", "Stats=polled"} {
		b.Run("Size=64KiB/"+mode+"/Impl=poolkit", func(b *testing.B) {
			im := newPoolkit(b, bytepool.Config{})
			warm(im, n, 1)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if mode == "Stats=polled" {
				wg.Go(func() {
					t := time.NewTicker(100 * time.Microsecond)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
							_ = im.p.Stats()
						}
					}
				})
			}
			b.ReportAllocs()
			for b.Loop() {
				buf := im.p.Get(n)
				buf[0] = 1
				sink = buf
				im.p.Put(buf)
			}
			close(stop)
			wg.Wait()
			sink = nil
			im.report(b)
		})
	}
	b.Run("Size=64KiB/Stats=counted/Impl=shard.Local", func(b *testing.B) {
		l := shard.NewLocal[[]byte](bytepool.DefaultDepth, nil)
		b.ReportAllocs()
		for b.Loop() {
			buf, ok := l.Pop()
			if !ok {
				buf = make([]byte, n)
			}
			buf[0] = 1
			sink = buf
			l.Push(buf)
		}
		sink = nil
	})
	b.Run("Size=64KiB/Stats=none/Impl=syncpool", func(b *testing.B) {
		var sp sync.Pool
		sp.New = func() any {
			buf := make([]byte, n)
			return &buf
		}
		b.ReportAllocs()
		for b.Loop() {
			h := sp.Get().(*[]byte)
			buf := (*h)[:n]
			buf[0] = 1
			sink = buf
			*h = buf
			sp.Put(h)
		}
		sink = nil
	})
}
