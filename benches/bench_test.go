package benches

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/poolkit/poolkit/benches/internal/e2e"
	"github.com/poolkit/poolkit/benches/internal/results"
	"github.com/poolkit/poolkit/benches/internal/workload"
)

// BenchmarkPool runs the object-pool groups: HotPath, Parallel, TimeoutArmed,
// Exchange and StatsOverhead, e.g.
// BenchmarkPool/Parallel/MaxSize=8/Goroutines=32/Impl=puddle.
func BenchmarkPool(b *testing.B) { runCases(b, workload.PoolCases(0)) }

// BenchmarkBytes runs the byte-pool groups: HotPath, Realistic, Sustained,
// Mixed, Burst, Contention, FullOverwrite, StatsOverhead and Growable, e.g.
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
	if in.Dials != nil {
		b.ReportMetric(float64(in.Dials())/float64(b.N), "dials/op")
	}
	if in.Tally != nil {
		if asked, capacity := in.Tally(); asked > 0 {
			b.ReportMetric(float64(capacity)/float64(asked), "cap/len")
		}
	}
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

// BenchmarkE2E runs the end-to-end cases with pools of MaxSize
// e2e.DefaultMaxSize: against the in-process echo server always, against
// Redis and PostgreSQL where POOLKIT_REDIS_ADDR and POOLKIT_POSTGRES_DSN name
// them (skipped otherwise), e.g.
// BenchmarkE2E/Server=redis/Phase=oversubscribed/Impl=puddle. Beside ns/op
// it reports dials/op: the connections dialled per op, the set-up included.
func BenchmarkE2E(b *testing.B) {
	env, err := e2e.Open(context.Background(), e2e.FromEnv())
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()
	for _, s := range env.Skipped {
		b.Fatalf("%s (set by %s or %s)", results.SkipLine(s), e2e.EnvRedisAddr, e2e.EnvPostgresDSN)
	}
	cases := env.Cases(context.Background(), e2e.DefaultMaxSize)
	for _, server := range []string{e2e.ServerEcho, e2e.ServerRedis, e2e.ServerPostgres} {
		if !slices.Contains(env.Servers(), server) {
			b.Run("Server="+server, func(b *testing.B) { b.Skip(e2eSkipReason(server)) })
			continue
		}
		var mine []workload.Case
		for _, c := range cases {
			if c.Group == "Server="+server {
				mine = append(mine, c)
			}
		}
		runCases(b, mine)
	}
}

// e2eSkipReason says how to run the end-to-end cases of server.
func e2eSkipReason(server string) string {
	switch server {
	case e2e.ServerRedis:
		return fmt.Sprintf("end to end: set %s (e.g. %s=%s) to run it against a real server", e2e.EnvRedisAddr, e2e.EnvRedisAddr, e2e.DefaultRedisAddr)
	case e2e.ServerPostgres:
		return fmt.Sprintf("end to end: set %s (e.g. %s='%s') to run it against a real server", e2e.EnvPostgresDSN, e2e.EnvPostgresDSN, e2e.DefaultPostgresDSN)
	}
	return "end to end: " + server + " is not available"
}
