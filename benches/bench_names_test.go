package benches

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/benches/internal/workload"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func names(cases []workload.Case) map[string]bool {
	out := map[string]bool{}
	for _, c := range cases {
		for _, e := range c.Entries {
			out[c.Name()+"/"+e.Key] = true
		}
	}
	return out
}

func TestBenchmarkNamesFollowTheIssue(t *testing.T) {
	procs := workload.Procs()
	pool := names(workload.PoolCases(0))
	bytes := names(workload.BytesCases(0))
	for _, n := range []string{
		"Pool/HotPath/Impl=poolkit",
		"Pool/HotPath/Impl=syncpool",
		fmt.Sprintf("Pool/Parallel/MaxSize=8/Goroutines=%d/Impl=puddle", 4*procs),
		fmt.Sprintf("Pool/Parallel/MaxSize=64/Goroutines=%d/Impl=chan", 64*procs),
		fmt.Sprintf("Pool/TimeoutArmed/Via=Context/MaxSize=8/Goroutines=%d/Impl=puddle", 4*procs),
		fmt.Sprintf("Pool/Exchange/MaxSize=64/Goroutines=%d/Hold=8/Exchange=none/Impl=poolkit", 4*procs),
		"Pool/StatsOverhead/Goroutines=1/Stats=off/Impl=poolkit",
		"Pool/Oversubscribed/MaxSize=8/Goroutines=32/Work=0/Impl=poolkit",
		"Pool/Oversubscribed/MaxSize=8/Goroutines=128/Work=200ns/Impl=puddle",
		"Pool/Oversubscribed/MaxSize=8/Goroutines=128/Work=200ns/Impl=mutex",
		"Pool/Oversubscribed/MaxSize=64/Goroutines=2/Work=0/Impl=chan",
		"Pool/Oversubscribed/MaxSize=64/Goroutines=128/Work=0/Impl=poolkit",
	} {
		assert.True(t, pool[n], n)
	}
	for _, n := range []string{
		"Bytes/HotPath/Size=4KiB/Impl=make",
		"Bytes/HotPath/Size=64KiB/Impl=syncpool",
		"Bytes/HotPath/Size=4MiB/Impl=bytebufferpool",
		"Bytes/Realistic/Size=64KiB/Goroutines=1/Impl=gobufferpool",
		"Bytes/Mixed/Sizes=Zipf/Impl=poolkit",
		"Bytes/Burst/Size=64KiB/N=1000/Impl=make",
		fmt.Sprintf("Bytes/Contention/Size=64KiB/Goroutines=%d/Depth=8/Impl=poolkit", procs),
		"Bytes/FullOverwrite/Size=1MiB/Impl=poolkit",
		"Bytes/StatsOverhead/Size=64KiB/Goroutines=1/Stats=every1ms/Impl=poolkit",
		"Bytes/Growable/Size=2KiB/Impl=poolkit",
		"Bytes/Growable/Size=32KiB/Impl=syncpool",
		"Bytes/Growable/Size=256KiB/Impl=bytebufferpool",
		"Bytes/Growable/Sizes=Mixed/Impl=bytesbuffer",
	} {
		assert.True(t, bytes[n], n)
	}
}

func TestEveryEntryNamesItsBaseline(t *testing.T) {
	for _, c := range append(workload.PoolCases(0), workload.BytesCases(0)...) {
		found := false
		seen := map[string]bool{}
		for _, e := range c.Entries {
			assert.False(t, seen[e.Name], "%s: two entries named %q", c.Name(), e.Name)
			seen[e.Name] = true
			found = found || e.Name == c.Baseline
		}
		assert.True(t, found, "%s: baseline %q is not an entry", c.Name(), c.Baseline)
	}
}

// TestEveryEntryRuns runs every op of every case a few times on each of its
// goroutines: the adapters work and nothing leaks.
func TestEveryEntryRuns(t *testing.T) {
	for _, c := range append(workload.PoolCases(0), workload.BytesCases(0)...) {
		for _, e := range c.Entries {
			t.Run(c.Sub()+"/"+e.Key, func(t *testing.T) {
				in, err := e.Setup()
				require.NoError(t, err)
				defer in.Close()
				for i := range c.Workers {
					op := in.Worker(i)
					for range 3 {
						require.NoError(t, op())
					}
				}
			})
		}
	}
}
