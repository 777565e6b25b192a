// Package workload defines what the benchmarks run: cases (one workload with
// fixed parameters) and, in each, the entries (contenders) that run it. The Go
// benchmarks of package benches and the poolbench command build their runs
// from the same Cases, so their names and their code are the same.
package workload

import (
	"fmt"
	"time"

	"github.com/poolkit/poolkit/benches/internal/contenders"
	"runtime"
	"strings"
)

// Op is one operation of one goroutine. It reports a failure (an acquire
// that timed out, say) as an error; the runners count them.
type Op func() error

// Instance is a contender set up for a case: Worker(i) returns the op of
// goroutine i (each goroutine has its own state), and Close releases
// everything, stopping any helper goroutine. Stats, if not nil, reads the
// contender's statistics.
type Instance struct {
	Worker func(i int) Op
	Close  func()
	Stats  func()
	// Dials, if not nil, returns how many connections the instance has
	// dialled so far (the end-to-end cases).
	Dials func() int64
	// Tally, if not nil, returns the bytes the instance's Gets have asked
	// for so far and the capacity they got (the cases with Memory). Read it
	// only while no goroutine runs an op.
	Tally func() (asked, capacity int64)
}

// instance makes the Instance of a contender value v (a contenders.Pool or
// contenders.Bytes) whose ops worker builds.
func instance(v interface{ Close() }, worker func(i int) Op) Instance {
	in := Instance{Worker: worker, Close: v.Close}
	if r, ok := v.(contenders.StatsReader); ok {
		in.Stats = r.ReadStats
	}
	if r, ok := v.(interface {
		Tally() (asked, capacity int64)
	}); ok {
		in.Tally = r.Tally
	}
	return in
}

// entries makes one entry per contender named, looked up by lookup (its name
// and constructor), each running the op that mk builds on its instance made
// with cfg.
func entries[Cfg any, P interface{ Close() }](cfg Cfg, names []string,
	lookup func(string) (string, func(Cfg) (P, error), error), mk func(P) func(i int) Op) []Entry {
	var es []Entry
	for _, name := range names {
		cname, newP, err := lookup(name)
		if err != nil {
			panic("workload: bug: " + err.Error())
		}
		es = append(es, Entry{
			Name: cname,
			Key:  "Impl=" + cname,
			Setup: func() (Instance, error) {
				p, err := newP(cfg)
				if err != nil {
					return Instance{}, fmt.Errorf("%s: %w", cname, err)
				}
				return instance(p, mk(p)), nil
			},
		})
	}
	return es
}

// Entry is one contender of a case.
type Entry struct {
	// Name identifies the entry in tables and charts: "poolkit", or
	// "poolkit ring" where a case runs one contender several ways.
	Name string
	// Key is the last part of the Go benchmark name: "Impl=poolkit", or
	// "Exchange=ring/Impl=poolkit".
	Key string
	// Setup makes a fresh instance.
	Setup func() (Instance, error)
}

// Case is one workload with fixed parameters, run by each of its entries.
type Case struct {
	// Top is the Go benchmark function: "Pool" or "Bytes".
	Top string
	// Group is the benchmark group: "HotPath", "Parallel", …
	Group string
	// Params are the fixed parameters, benchmark-name style:
	// "MaxSize=8/Goroutines=32"; "" for none.
	Params string
	// Workers is the number of goroutines that run the op at once.
	Workers int
	// OpsPerWorker, if not 0, fixes how many ops each goroutine runs in one
	// go (Sustained: 10 000).
	OpsPerWorker int
	// Unit says what one op is.
	Unit string
	// Baseline is the Name of the entry the others are compared with.
	Baseline string
	// Latency says whether the latency distribution is worth reporting
	// (several goroutines, or ops slow enough to vary).
	Latency bool
	// Server, for an end-to-end case, describes the server the entries talk
	// to: "Redis 7.2.4 at 127.0.0.1:6379".
	Server string
	// Setup says how the entries are configured: "pools of MaxSize 8".
	Setup string
	// TimeWaitPort, if not 0, is the server's port: the runner counts its
	// sockets in TIME_WAIT before each measurement and after it.
	TimeWaitPort int
	// Memory says that the runner records, for each round, the waste of the
	// Gets (Instance.Tally) and what the contender retains once the round
	// has ended (the live heap after a collection, less what was live
	// before its set-up).
	Memory bool
	// TimeEachOp says that every op is timed on its own (a batch of one),
	// for the latency of single acquires where ops are slow enough (a few
	// hundred ns) for a clock reading per op.
	TimeEachOp bool
	// MinDuration, if not 0, is the least each contender runs per round
	// when the run is timed (not counted in ops).
	MinDuration time.Duration
	// Fairness says that the runner records how evenly the goroutines were
	// served: Jain's index of their op counts and the least over the most.
	Fairness bool
	Entries  []Entry
}

// Name is the case's full name: "Pool/Parallel/MaxSize=8/Goroutines=32".
func (c Case) Name() string {
	n := c.Top + "/" + c.Group
	if c.Params != "" {
		n += "/" + c.Params
	}
	return n
}

// Sub is the case's name below its Go benchmark function:
// "Parallel/MaxSize=8/Goroutines=32".
func (c Case) Sub() string { return strings.TrimPrefix(c.Name(), c.Top+"/") }

// Procs is GOMAXPROCS, as the goroutine counts of the cases scale with it.
func Procs() int { return runtime.GOMAXPROCS(0) }

// Sizes in bytes, for names.
const (
	KiB = 1 << 10
	MiB = 1 << 20
)

// SizeName formats n as in the benchmark names: 4KiB, 1MiB, 512B.
func SizeName(n int) string {
	switch {
	case n >= MiB && n%MiB == 0:
		return fmt.Sprintf("%dMiB", n/MiB)
	case n >= KiB && n%KiB == 0:
		return fmt.Sprintf("%dKiB", n/KiB)
	}
	return fmt.Sprintf("%dB", n)
}

// PoolCases returns every object-pool case, in this order:
// HotPath, Parallel, Oversubscribed, TimeoutArmed, HandOff, Exchange,
// StatsOverhead. workers, if not 0, replaces the goroutine sweeps.
func PoolCases(workers int) []Case {
	return concat(PoolHotPath(), PoolParallel(workers), PoolOversubscribed(workers), PoolTimeoutArmed(workers),
		PoolHandOff(workers), PoolExchange(workers), PoolStatsOverhead(workers))
}

// BytesCases returns every byte-pool case: HotPath, Realistic, Sustained,
// Mixed, Burst, Contention, FullOverwrite, StatsOverhead, Growable.
func BytesCases(workers int) []Case {
	return concat(BytesHotPath(), BytesRealistic(workers), BytesSustained(workers), BytesMixed(),
		BytesBurst(), BytesContention(workers), BytesFullOverwrite(), BytesStatsOverhead(workers), BytesGrowable())
}

func concat(lists ...[]Case) []Case {
	var out []Case
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
