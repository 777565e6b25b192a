package bytepool_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/internal/shard"
)

// The benchmarks here measure bytepool alone: its hot path at several sizes,
// the configurations its decisions turn on (spills capped below a burst, a
// deep stack), and beside them the building block under its fast path, a
// per-P stack alone. Comparisons with other byte pools (make, sync.Pool,
// go-buffer-pool, bytebufferpool) live in package benches, run by poolbench
// (docs/BENCHMARKS.md), with every contender in the same binary.
//
// Every pool row reports the bytes the pool retains at the end (retained-B).

// sink makes buffers escape, as they do in real programs.
var sink []byte

func newBenchPool(b *testing.B, cfg bytepool.Config) *bytepool.Pool {
	p, err := bytepool.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

func reportRetained(b *testing.B, p *bytepool.Pool) {
	b.ReportMetric(float64(p.Stats().Retained), "retained-B")
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

// warm gets k buffers of size n and puts them back, so that the pool starts
// from its steady state rather than from empty.
func warm(p *bytepool.Pool, n, k int) {
	bufs := make([][]byte, k)
	for i := range k {
		bufs[i] = p.Get(n)
	}
	for i := range k {
		p.Put(bufs[i])
	}
}

// touch writes one byte per 4 KiB page.
func touch(b []byte) {
	for i := 0; i < len(b); i += 4096 {
		b[i] = byte(i)
	}
}

// getPut is one Get and Put of n bytes, the buffer written once and
// escaping.
func getPut(p *bytepool.Pool, n int) {
	buf := p.Get(n)
	buf[0] = 1
	sink = buf
	p.Put(buf)
}

func BenchmarkGetPut(b *testing.B) {
	b.Run("HotPath", benchHotPath)
	b.Run("Mixed", benchMixed)
	b.Run("Burst", benchBurst)
	b.Run("BurstSpread", benchBurstSpread)
	b.Run("StatsOverhead", benchStatsOverhead)
}

// benchHotPath: Get + Put of one size by one goroutine, no page writes, and
// the floor: the per-P stack alone (internal/shard.Local Pop + Push), which
// is what the pool's fast path runs plus the size-class arithmetic.
func benchHotPath(b *testing.B) {
	for _, n := range []int{4 << 10, 64 << 10, 1 << 20, 4 << 20} {
		b.Run("Size="+sizeName(n), func(b *testing.B) {
			p := newBenchPool(b, bytepool.Config{})
			warm(p, n, 1)
			b.ReportAllocs()
			for b.Loop() {
				buf := p.Get(n) // written out: getPut is not inlined
				buf[0] = 1
				sink = buf
				p.Put(buf)
			}
			sink = nil
			reportRetained(b, p)
		})
	}
	b.Run("Size=64KiB/Floor=shard.Local", func(b *testing.B) {
		const n = 64 << 10
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

// benchMixed: Get + Put over seven sizes, round robin or Zipf.
func benchMixed(b *testing.B) {
	for _, mix := range []string{"RoundRobin", "Zipf"} {
		b.Run("Mix="+mix, func(b *testing.B) {
			p := newBenchPool(b, bytepool.Config{})
			for _, n := range mixedSizes {
				warm(p, n, 1)
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
				getPut(p, n)
			}
			sink = nil
			reportRetained(b, p)
		})
	}
}

// burstConfigs are the configurations of the Burst rows. The default pool's
// 64 KiB class grows, in its first burst, to 8 buffers per P on the stack
// and as many in the spill as the burst needs (up to 4096; Stats.Classes);
// spill128 stops the spills at 128, so N = 1000 does not fit it and shows
// what the exchange and the allocator cost; deep is Config{Depth: 128}: a
// burst of up to 128 stays on the per-P stack.
var burstConfigs = []struct {
	name string
	cfg  bytepool.Config
}{
	{"default", bytepool.Config{}},
	{"spill128", bytepool.Config{Spill: 128}},
	{"deep", bytepool.Config{Depth: 128}},
}

// benchBurst: get N × 64 KiB (one write per page), then put all N.
func benchBurst(b *testing.B) {
	for _, burst := range []int{10, 100, 1000} {
		for _, c := range burstConfigs {
			runBurst(b, c.name, c.cfg, burst, func(buf []byte, _ int) { touch(buf) })
		}
	}
}

// runBurst runs one Burst row: get burst × 64 KiB, writing each with
// write(buf, j), then put them all.
func runBurst(b *testing.B, name string, cfg bytepool.Config, burst int, write func(buf []byte, j int)) {
	const n = 64 << 10
	b.Run("N="+strconv.Itoa(burst)+"/Size=64KiB/Config="+name, func(b *testing.B) {
		p := newBenchPool(b, cfg)
		warm(p, n, burst)
		bufs := make([][]byte, burst)
		b.ReportAllocs()
		for b.Loop() {
			for j := range bufs {
				bufs[j] = p.Get(n)
				write(bufs[j], j)
			}
			sink = bufs[burst-1]
			for j := range bufs {
				p.Put(bufs[j])
				bufs[j] = nil
			}
		}
		sink = nil
		reportRetained(b, p)
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
// page offset 0, hence in one L1 cache set, which on some machines costs
// more than the pool does.
func benchBurstSpread(b *testing.B) {
	for _, burst := range []int{10, 100} {
		for _, c := range burstConfigs {
			if c.name != "spill128" { // the same as default below N = 128
				runBurst(b, c.name, c.cfg, burst, touchSpread)
			}
		}
	}
}

// benchStatsOverhead: the 64 KiB hot path of the pool (whose only hot
// counter is the hit count the per-P stacks keep per P), alone and while
// another goroutine reads Stats every 100 µs.
func benchStatsOverhead(b *testing.B) {
	const n = 64 << 10
	for _, mode := range []string{"Stats=counted", "Stats=polled"} {
		b.Run("Size=64KiB/"+mode, func(b *testing.B) {
			p := newBenchPool(b, bytepool.Config{})
			warm(p, n, 1)
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
							_ = p.Stats()
						}
					}
				})
			}
			b.ReportAllocs()
			for b.Loop() {
				getPut(p, n)
			}
			close(stop)
			wg.Wait()
			sink = nil
			reportRetained(b, p)
		})
	}
}

// BenchmarkBuffer is a growable buffer used as a request uses one whose
// final size it does not know, on GOMAXPROCS goroutines: taken, written 512
// bytes at a time to 2 KiB, 32 KiB or 256 KiB, written to io.Discard, given
// back. The reference is a sync.Pool of *bytes.Buffer (syncpool); poolkit
// is Pool.NewBuffer(0) on a pool of its own, poolkit-default the same on
// Default(), poolkit-zero on a zero Pool, poolkit-hint NewBuffer(size).
// Compare with
//
//	go test -run '^$' -bench '^BenchmarkBuffer$' -count 10 ./bytepool | benchstat -col /Impl -
func BenchmarkBuffer(b *testing.B) {
	chunk := make([]byte, 512)
	for _, size := range []int{2 << 10, 32 << 10, 256 << 10} {
		b.Run("Size="+sizeName(size), func(b *testing.B) {
			b.Run("Impl=syncpool", func(b *testing.B) {
				sp := sync.Pool{New: func() any { return new(bytes.Buffer) }}
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						buf := sp.Get().(*bytes.Buffer)
						buf.Reset()
						for w := 0; w < size; w += len(chunk) {
							buf.Write(chunk)
						}
						_, _ = buf.WriteTo(io.Discard)
						sp.Put(buf)
					}
				})
			})
			var zero bytepool.Pool
			for _, impl := range []struct {
				name string
				p    *bytepool.Pool
				hint int
			}{
				{"poolkit", newBenchPool(b, bytepool.Config{}), 0},
				{"poolkit-default", bytepool.Default(), 0},
				{"poolkit-zero", &zero, 0},
				{"poolkit-hint", newBenchPool(b, bytepool.Config{}), size},
			} {
				b.Run("Impl="+impl.name, func(b *testing.B) {
					b.ReportAllocs()
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							buf := impl.p.NewBuffer(impl.hint)
							for w := 0; w < size; w += len(chunk) {
								_, _ = buf.Write(chunk)
							}
							_, _ = buf.WriteTo(io.Discard)
							buf.Free()
						}
					})
					reportRetained(b, impl.p)
				})
			}
		})
	}
}
