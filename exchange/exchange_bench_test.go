package exchange_test

import (
	"fmt"
	"math/bits"
	"sync"
	"testing"
	"time"

	"github.com/poolkit/poolkit/exchange"
)

// benchCap is the capacity of every exchange benchmarked. It is at least the
// largest goroutine count, so Park fails only transiently, never because the
// exchange is really full.
const benchCap = 64

var benchGoroutines = []int{1, 2, 4, 8, 16, 32}

// benchImpls are the contenders: the two bounded implementations and, as the
// baseline, a buffered channel of the same capacity.
var benchImpls = []struct {
	name string
	make func() exchange.Exchange[int]
}{
	{"Ring", func() exchange.Exchange[int] { return exchange.NewRing[int](benchCap) }},
	{"Mutex", func() exchange.Exchange[int] { return exchange.NewMutex[int](benchCap) }},
	{"Chan", func() exchange.Exchange[int] { return make(chanExchange[int], benchCap) }},
}

// chanExchange adapts a buffered channel to Exchange with non-blocking
// selects; it is the reference the implementations are measured against.
type chanExchange[T any] chan T

func (c chanExchange[T]) Park(v T) bool {
	select {
	case c <- v:
		return true
	default:
		return false
	}
}

func (c chanExchange[T]) Unpark() (T, bool) {
	select {
	case v := <-c:
		return v, true
	default:
		var zero T
		return zero, false
	}
}

func (c chanExchange[T]) Len() int { return len(c) }
func (c chanExchange[T]) Cap() int { return cap(c) }

// Counts is not kept by the reference (the benchmarks do not call it).
func (c chanExchange[T]) Counts() (parked, unparked uint64) { return 0, 0 }

// share returns how many of n iterations goroutine i of g runs.
func share(n, g, i int) int {
	s := n / g
	if i < n%g {
		s++
	}
	return s
}

// BenchmarkParkUnpark: G goroutines, each looping Park then Unpark, b.N pairs
// in total. ns/op is wall time per pair across all goroutines. fails/op counts
// Parks that reported full plus Unparks that reported empty, per pair.
//
// Unpark runs even when Park failed: a transient "empty" leaves one value
// behind, and if a failed Park skipped its Unpark, those leftovers would fill
// the ring for good and every later Park would fail. Always unparking keeps
// the exchange balanced in expectation. Each goroutine has at most one value parked, and benchCap
// exceeds the goroutine count, so with an exact exchange fails/op is 0: any
// failure is a transient report (see Ring.Park and Ring.Unpark). A failed call
// is cheap, so ns/op must be read together with fails/op.
func BenchmarkParkUnpark(b *testing.B) {
	for _, impl := range benchImpls {
		for _, g := range benchGoroutines {
			b.Run(fmt.Sprintf("Impl=%s/Goroutines=%d", impl.name, g), func(b *testing.B) {
				x := impl.make()
				fails := make([]int, g)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i := range g {
					n := share(b.N, g, i)
					wg.Go(func() {
						<-start
						f := 0
						for range n {
							if !x.Park(i) {
								f++
							}
							if _, ok := x.Unpark(); !ok {
								f++
							}
						}
						fails[i] = f
					})
				}
				b.ReportAllocs()
				b.ResetTimer()
				close(start)
				wg.Wait()
				b.StopTimer()
				total := 0
				for _, f := range fails {
					total += f
				}
				b.ReportMetric(float64(total)/float64(b.N), "fails/op")
			})
		}
	}
}

// latencyBatch is how many Park+Unpark pairs are timed per clock read: the
// clock costs about as much as a few pairs, so each sample spreads it over 16.
const latencyBatch = 16

// BenchmarkLatency: as BenchmarkParkUnpark, but each goroutine times its
// pairs in batches of latencyBatch and records the per-pair time of each
// batch in its own histogram. The reported p50-ns, p99-ns, p99.9-ns and max-ns
// (ns per pair) are those of the worst goroutine: the one with the highest
// p99. Each sample includes latencyBatch-th of a clock read. fails/op is as in
// BenchmarkParkUnpark; a failed call is cheap, so read the latency figures
// together with it.
func BenchmarkLatency(b *testing.B) {
	for _, impl := range benchImpls {
		for _, g := range benchGoroutines {
			b.Run(fmt.Sprintf("Impl=%s/Goroutines=%d", impl.name, g), func(b *testing.B) {
				x := impl.make()
				hists := make([]*histogram, g)
				for i := range hists {
					hists[i] = new(histogram)
				}
				fails := make([]int, g)
				start := make(chan struct{})
				var wg sync.WaitGroup
				for i := range g {
					n := share(b.N, g, i)
					h := hists[i]
					wg.Go(func() {
						<-start
						f := 0
						for n > 0 {
							k := min(n, latencyBatch)
							n -= k
							t0 := time.Now()
							for range k {
								if !x.Park(i) {
									f++
								}
								if _, ok := x.Unpark(); !ok {
									f++
								}
							}
							d := time.Since(t0)
							h.record(uint64(d)*latencyBatch/uint64(k), k)
						}
						fails[i] = f
					})
				}
				b.ReportAllocs()
				b.ResetTimer()
				close(start)
				wg.Wait()
				b.StopTimer()
				total := 0
				for _, f := range fails {
					total += f
				}
				b.ReportMetric(float64(total)/float64(b.N), "fails/op")

				var worst *histogram
				for _, h := range hists {
					if h.n > 0 && (worst == nil || h.quantile(0.99) > worst.quantile(0.99)) {
						worst = h
					}
				}
				if worst == nil {
					return
				}
				perPair := func(v uint64) float64 { return float64(v) / latencyBatch }
				b.ReportMetric(perPair(worst.quantile(0.50)), "p50-ns")
				b.ReportMetric(perPair(worst.quantile(0.99)), "p99-ns")
				b.ReportMetric(perPair(worst.quantile(0.999)), "p99.9-ns")
				b.ReportMetric(perPair(worst.max), "max-ns")
			})
		}
	}
}

// histogram is a fixed-size log-linear histogram of batch durations in ns
// (scaled to a full batch): exact below 64, then 64 buckets per power of two,
// so a bucket is at most 1/64 (1.6%) wide relative to its values. Memory is
// fixed (about 30 KiB) whatever the number of samples. Owned by one goroutine
// until wg.Wait.
type histogram struct {
	counts [histBuckets]uint64
	n      uint64 // samples recorded
	max    uint64 // largest value recorded, exact
}

const (
	histSubBits = 6
	histSub     = 1 << histSubBits
	histBuckets = (64 - histSubBits + 1) * histSub // histIndex(1<<64-1) == histBuckets-1
)

// histIndex maps v to its bucket. Values below histSub have their own bucket;
// above, the top histSubBits+1 bits of v select the bucket.
func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits - 1
	return shift*histSub + int(v>>shift)
}

// histLow returns the smallest value in bucket i.
func histLow(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	shift := i/histSub - 1
	return uint64(i-shift*histSub) << shift
}

// record adds weight samples of value v (a batch of weight pairs counts for
// weight pairs, so short final batches do not skew the distribution).
func (h *histogram) record(v uint64, weight int) {
	h.counts[histIndex(v)] += uint64(weight)
	h.n += uint64(weight)
	h.max = max(h.max, v)
}

// quantile returns the middle of the bucket holding the q-quantile, capped at
// the exact maximum.
func (h *histogram) quantile(q float64) uint64 {
	rank := uint64(q * float64(h.n))
	if rank >= h.n {
		rank = h.n - 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > rank {
			if i == histBuckets-1 {
				return h.max
			}
			mid := (histLow(i) + histLow(i+1)) / 2
			return min(mid, h.max)
		}
	}
	return h.max
}
