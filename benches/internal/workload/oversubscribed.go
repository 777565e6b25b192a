package workload

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolkit/poolkit/benches/internal/contenders"
)

// OversubscribedCell is one cell of Pool/Oversubscribed: a pool of MaxSize
// shared by Goroutines goroutines, each holding its object for Work.
type OversubscribedCell struct {
	MaxSize, Goroutines int
	Work                time.Duration
}

// OversubscribedCells are the cells of Pool/Oversubscribed: many more
// goroutines than objects (MaxSize 8: 32 and 128 goroutines, with no work
// and with 200 ns of work per lease), and MaxSize 64 from 2 to 128
// goroutines, where throughput should stay flat.
var OversubscribedCells = []OversubscribedCell{
	{8, 32, 0}, {8, 128, 0}, {8, 32, 200 * time.Nanosecond}, {8, 128, 200 * time.Nanosecond},
	{64, 2, 0}, {64, 8, 0}, {64, 32, 0}, {64, 128, 0},
}

// oversubscribedPools are the bounded pools compared there; sync.Pool,
// which never waits, has nothing to show.
var oversubscribedPools = []string{"poolkit", "chan", "mutex", "puddle"}

// PoolOversubscribed is the connection pool's usual life: more goroutines
// than objects, each acquiring, working for a fixed time while it holds the
// object, and releasing. Every op is timed on its own (Case.TimeEachOp) and
// the runner records how evenly the goroutines were served (Case.Fairness).
// workers, if not 0, replaces the goroutine counts.
func PoolOversubscribed(workers int) []Case {
	var cases []Case
	seen := map[string]bool{}
	for _, cell := range OversubscribedCells {
		g := cell.Goroutines
		if workers > 0 {
			g = workers
		}
		params := fmt.Sprintf("MaxSize=%d/Goroutines=%d/Work=%s", cell.MaxSize, g, workName(cell.Work))
		if seen[params] {
			continue
		}
		seen[params] = true
		unit := "one Acquire + Release"
		if cell.Work > 0 {
			unit = fmt.Sprintf("one Acquire, %v of work, one Release", cell.Work)
		}
		cases = append(cases, Case{
			Top: "Pool", Group: "Oversubscribed", Params: params,
			Workers: g, Unit: unit, Baseline: "chan", Latency: true, TimeEachOp: true, Fairness: true,
			MinDuration: fairRound(g),
			Entries:     poolEntries(contenders.PoolConfig{MaxSize: cell.MaxSize}, oversubscribedPools, holdWhile(func() { Spin(cell.Work) })),
		})
	}
	return cases
}

// fairRound is how long a round must last for the goroutines' op counts to
// say something about the pool: the scheduler lets a goroutine that never
// blocks run for 10 ms before it preempts it, so in a round shorter than
// goroutines × 10 ms / GOMAXPROCS some goroutines do not run at all, however
// fair the pool. Twice that, and at least half a second.
func fairRound(goroutines int) time.Duration {
	return max(500*time.Millisecond, time.Duration(2*goroutines)*10*time.Millisecond/time.Duration(Procs()))
}

func workName(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return d.String()
}

// Spin computes for about d: a loop of as many steps as d takes on this
// machine, calibrated once per process (the best of several trials, so a
// busy machine makes the work longer, never shorter). Unlike a wait on the
// clock, it is work: a goroutine descheduled in the middle still owes it.
func Spin(d time.Duration) {
	if d <= 0 {
		return
	}
	// The comparison with a variable keeps the loop from being optimised
	// away without a store that every goroutine would share.
	if spinSteps(int(float64(d.Nanoseconds())*stepsPerNs())) == spinNever {
		spinHits.Add(1)
	}
}

var (
	spinNever uint64 // a value spinSteps practically never returns
	spinHits  atomic.Int64
)

// spinSteps runs n steps of a linear congruential generator and returns its
// state.
func spinSteps(n int) uint64 {
	x := uint64(88172645463325252)
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

var (
	calibrateOnce sync.Once
	perNs         float64
)

// stepsPerNs is how many spinSteps steps a nanosecond holds here.
func stepsPerNs() float64 {
	calibrateOnce.Do(func() {
		const n = 1 << 20
		best := time.Duration(1 << 62)
		for range 5 {
			t := time.Now()
			if spinSteps(n) == spinNever {
				spinHits.Add(1)
			}
			best = min(best, time.Since(t))
		}
		perNs = n / float64(max(best.Nanoseconds(), 1))
	})
	return perNs
}
