package benches

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/poolkit/poolkit/benches/internal/workload"
)

// BenchmarkPool runs the object-pool groups: HotPath, Parallel, TimeoutArmed,
// Exchange and StatsOverhead, e.g.
// BenchmarkPool/Parallel/MaxSize=8/Goroutines=32/Impl=puddle.
func BenchmarkPool(b *testing.B) { runCases(b, workload.PoolCases(0)) }

// BenchmarkBytes runs the byte-pool groups: HotPath, Realistic, Sustained,
// Mixed, Burst, Contention, FullOverwrite and StatsOverhead, e.g.
// BenchmarkBytes/HotPath/Size=64KiB/Impl=syncpool.
func BenchmarkBytes(b *testing.B) { runCases(b, workload.BytesCases(0)) }

func runCases(b *testing.B, cases []workload.Case) {
	for _, c := range cases {
		b.Run(c.Sub(), func(b *testing.B) {
			for _, e := range c.Entries {
				b.Run(e.Key, func(b *testing.B) { runEntry(b, c, e) })
			}
		})
	}
}

// runEntry runs b.N ops of e, split evenly among the case's goroutines; for
// a case with OpsPerWorker (Sustained), one op of the benchmark is that many
// ops on every goroutine, and ns/Get reports the cost of one of them.
func runEntry(b *testing.B, c workload.Case, e workload.Entry) {
	in, err := e.Setup()
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	ops := make([]workload.Op, c.Workers)
	for i := range ops {
		ops[i] = in.Worker(i)
	}
	var errs atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	switch {
	case c.OpsPerWorker > 0:
		for range b.N {
			runWorkers(ops, func(int) int { return c.OpsPerWorker }, &errs)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*c.Workers*c.OpsPerWorker), "ns/Get")
	case c.Workers == 1:
		op := ops[0]
		for range b.N {
			if op() != nil {
				errs.Add(1)
			}
		}
	default:
		w := len(ops)
		runWorkers(ops, func(i int) int { return b.N/w + btoi(i < b.N%w) }, &errs)
	}
	b.StopTimer()
	if n := errs.Load(); n > 0 {
		b.Fatalf("%d ops failed", n)
	}
}

// runWorkers runs ops[i] n(i) times on goroutine i, all at once.
func runWorkers(ops []workload.Op, n func(i int) int, errs *atomic.Int64) {
	var start, wg sync.WaitGroup
	start.Add(1)
	for i, op := range ops {
		wg.Go(func() {
			start.Wait()
			for range n(i) {
				if op() != nil {
					errs.Add(1)
				}
			}
		})
	}
	start.Done()
	wg.Wait()
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
