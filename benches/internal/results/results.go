// Package results holds what poolbench measures: the machine, the settings
// and every round's raw numbers, in a form that round-trips through JSON, so
// that every table and chart can be regenerated from a results file, and
// where each figure came from (Sources: the runs merged into a file, their
// commits). It derives what the tables show: per contender the median
// round and the spread from the fastest to the slowest, the worst
// goroutine's latency, and the verdict of a Mann–Whitney U test of its
// rounds against poolkit's (Compare, with golang.org/x/perf/benchmath) with
// the ratio and its confidence interval; and for the faults phase and the
// keyed case the medians and ranges over their rounds. It prints them as text, JSON or
// markdown.
package results

import (
	"math"
	"slices"
	"sort"
	"strings"
)

// Schema is the version of the results file format.
const Schema = 1

// File is a results file: one run of poolbench.
type File struct {
	Schema  int    `json:"schema"`
	Command string `json:"command"` // the poolbench invocation that measured it
	Note    string `json:"note,omitempty"`
	// Interrupted says that the run was stopped (Ctrl-C) before the end:
	// the cases hold the rounds completed so far.
	Interrupted bool     `json:"interrupted,omitempty"`
	Machine     Machine  `json:"machine"`
	Settings    Settings `json:"settings"`
	Cases       []Case   `json:"cases"`
	// Skipped lists the servers an end-to-end run left out, and why (a
	// server that did not answer).
	Skipped []Skip `json:"skipped,omitempty"`
	// Updates lists the later runs merged into the file (poolbench -merge):
	// the cases each measured replaced those of the same name, or were
	// added. Command, Machine and Settings above are the first run's.
	Updates []Update `json:"updates,omitempty"`
	// Icount holds the instruction counts of poolbench icount, if they were
	// merged into the file; they carry their own command and machine.
	Icount *Icount `json:"icount,omitempty"`
	// Faults holds the faults phase (poolbench -mode=faults), if the run
	// had one.
	Faults *Faults `json:"faults,omitempty"`
	// Keyed holds the keyed case (poolbench -mode=keyed), if the run had
	// one.
	Keyed *Keyed `json:"keyed,omitempty"`
}

// Update is a run merged into a results file.
type Update struct {
	Command  string   `json:"command"`
	Machine  Machine  `json:"machine"`
	Settings Settings `json:"settings"`
	// Cases names the cases the run measured.
	Cases []string `json:"cases"`
	// Faults says that the run measured the faults phase, which replaced
	// the file's.
	Faults bool `json:"faults,omitempty"`
	// Keyed says that the run measured the keyed mode, which replaced the
	// file's whole (its crowded and split cases).
	Keyed bool `json:"keyed,omitempty"`
}

// Merge returns f with the cases of g in place of those of the same name,
// and those f lacks added after the last case of their group (at the end if
// f has none of that group); g's run is recorded in Updates.
func Merge(f, g File) File {
	out := f
	out.Cases = slices.Clone(f.Cases)
	up := Update{Command: g.Command, Machine: g.Machine, Settings: g.Settings}
	for _, c := range g.Cases {
		up.Cases = append(up.Cases, c.Name)
		if i := slices.IndexFunc(out.Cases, func(k Case) bool { return k.Name == c.Name }); i >= 0 {
			out.Cases[i] = c
			continue
		}
		at := len(out.Cases)
		for i, k := range out.Cases {
			if k.Group == c.Group {
				at = i + 1
			}
		}
		out.Cases = slices.Insert(out.Cases, at, c)
	}
	out.Interrupted = f.Interrupted || g.Interrupted
	if g.Icount != nil {
		out.Icount = g.Icount
	}
	if g.Faults != nil {
		out.Faults = g.Faults
		up.Faults = true
	}
	if g.Keyed != nil {
		out.Keyed = g.Keyed
		up.Keyed = true
	}
	out.Updates = append(slices.Clone(f.Updates), up)
	return out
}

// Skip is a server an end-to-end run did not measure.
type Skip struct {
	Server string `json:"server"` // "redis", "postgres"
	Reason string `json:"reason"` // "127.0.0.1:6379: dial tcp …: connection refused"
}

// Settings are the flags that shaped the run.
type Settings struct {
	Mode string `json:"mode"`
	// Rounds is the number of rounds asked for; a case of an interrupted
	// run may hold fewer.
	Rounds int `json:"rounds"`
	// Ops is the number of ops per contender per round, split among its
	// goroutines; 0 when DurationNs decides.
	Ops int64 `json:"ops,omitempty"`
	// DurationNs is how long each contender runs per round when Ops is 0.
	DurationNs int64 `json:"duration_ns,omitempty"`
	// Workers replaced the goroutine sweeps when not 0.
	Workers int `json:"workers,omitempty"`
	// E2E holds the settings of the end-to-end cases, if the run had any.
	E2E *E2ESettings `json:"e2e,omitempty"`
}

// E2ESettings shaped the end-to-end cases, which run longer than the others.
type E2ESettings struct {
	// Ops is the number of ops per contender per round; 0 when DurationNs
	// decides.
	Ops        int64 `json:"ops,omitempty"`
	DurationNs int64 `json:"duration_ns,omitempty"`
	// MaxSize is that of every pool: the steady phase runs as many
	// goroutines, the oversubscribed phase four times as many.
	MaxSize int `json:"max_size"`
	// LocalPortRange and TCPTWReuse are the kernel settings that bound how
	// many sockets can wait in TIME_WAIT for one server
	// (net.ipv4.ip_local_port_range, net.ipv4.tcp_tw_reuse); "" if unknown.
	LocalPortRange string `json:"local_port_range,omitempty"`
	TCPTWReuse     string `json:"tcp_tw_reuse,omitempty"`
}

// Case is one table: a workload with fixed parameters and its contenders.
type Case struct {
	Name     string `json:"name"`  // "Pool/Parallel/MaxSize=8/Goroutines=32"
	Group    string `json:"group"` // "Pool/Parallel"
	Params   string `json:"params,omitempty"`
	Workers  int    `json:"workers"`
	Unit     string `json:"unit"` // what one op is
	Baseline string `json:"baseline"`
	Latency  bool   `json:"latency,omitempty"`
	// Server, for an end-to-end case, is what it ran against: "Redis 7.2.4
	// at 127.0.0.1:6379".
	Server string `json:"server,omitempty"`
	// Setup is how the contenders were configured: "pools of MaxSize 8".
	Setup string `json:"setup,omitempty"`
	// Dials says that the rounds count the connections dialled.
	Dials bool `json:"dials,omitempty"`
	// TimeWait says that the rounds count the sockets of the server's port
	// in TIME_WAIT before and after.
	TimeWait bool `json:"time_wait,omitempty"`
	// Memory says that the rounds record the bytes the Gets asked for and
	// got (a byte pool's waste) and what the contender retained.
	Memory bool `json:"memory,omitempty"`
	// Fairness says that the rounds record Jain's index of the goroutines'
	// op counts.
	Fairness bool `json:"fairness,omitempty"`
	// Contenders in the order of the first round.
	Contenders []Contender `json:"contenders"`
}

// Contender is one entry of a case and its rounds.
type Contender struct {
	Name   string  `json:"name"`
	Key    string  `json:"key"` // the Go benchmark's last name elements
	Rounds []Round `json:"rounds"`
}

// Round is one measurement of one contender.
type Round struct {
	Round    int   `json:"round"`    // 0-based round number
	Position int   `json:"position"` // 0-based place in the round's order
	Ops      int64 `json:"ops"`      // ops run, all goroutines together
	WallNs   int64 `json:"wall_ns"`  // from the start signal to the last goroutine's end
	Mallocs  int64 `json:"mallocs"`  // runtime.MemStats.Mallocs delta over the round
	Bytes    int64 `json:"bytes"`    // runtime.MemStats.TotalAlloc delta over the round
	Errors   int64 `json:"errors,omitempty"`
	// Batch is how many ops one clock reading timed.
	Batch int `json:"batch"`
	// MinWorkerOps and MaxWorkerOps are the ops of the least and most
	// productive goroutine (equal with one goroutine, or with fixed ops).
	MinWorkerOps int64 `json:"min_worker_ops"`
	MaxWorkerOps int64 `json:"max_worker_ops"`
	// Jain is, where the case records fairness, Jain's index of the
	// goroutines' op counts (see Jain).
	Jain float64 `json:"jain,omitempty"`
	// Latency is the distribution of the worst goroutine; nil if the case
	// does not record latency.
	Latency *Latency `json:"latency,omitempty"`
	// Dials is the number of connections the contender dialled, from its
	// set-up to the end of the round (warm-up included); 0 where the case
	// does not count them.
	Dials int64 `json:"dials,omitempty"`
	// TimeWait is the census of TIME_WAIT sockets of the server's port just
	// before the contender was set up and after it was closed; nil where the
	// case does not take it.
	TimeWait *TimeWait `json:"time_wait,omitempty"`
	// Asked and Capacity are, where the case records memory, the bytes the
	// round's Gets asked for and the capacity of the buffers they got.
	Asked    int64 `json:"asked_bytes,omitempty"`
	Capacity int64 `json:"capacity_bytes,omitempty"`
	// Retained is, where the case records memory, the heap still live once
	// the round has ended and a collection has run, less what was live
	// before the contender was set up: what the contender keeps, its own
	// structures included.
	Retained int64 `json:"retained_bytes,omitempty"`
}

// Waste is the capacity the round's Gets got per byte asked: cap/len; NaN
// where not recorded.
func (r Round) Waste() float64 {
	if r.Asked == 0 {
		return math.NaN()
	}
	return float64(r.Capacity) / float64(r.Asked)
}

// TimeWait counts the sockets of a server's port in TIME_WAIT (either end)
// before a round and after it, once its connections were closed. Sockets
// left by earlier rounds (they stay 60 s on Linux) are in Before; some may
// expire during the round, so After - Before is a lower bound of what the
// round left.
type TimeWait struct {
	Before int `json:"before"`
	After  int `json:"after"`
}

// Left is what the round added: After - Before.
func (t TimeWait) Left() int { return t.After - t.Before }

// Latency is one goroutine's latency distribution, in nanoseconds per op.
// Where an op is faster than a clock reading is worth, one sample is the
// mean of a batch of ops (Round.Batch).
type Latency struct {
	Worker int     `json:"worker"`
	P50    float64 `json:"p50_ns"`
	P99    float64 `json:"p99_ns"`
	P999   float64 `json:"p999_ns"`
	Max    float64 `json:"max_ns"`
}

// NsPerOp is the wall time of the round divided by its ops: the inverse of
// throughput, as go test -bench reports it.
func (r Round) NsPerOp() float64 {
	if r.Ops == 0 {
		return math.NaN()
	}
	return float64(r.WallNs) / float64(r.Ops)
}

// AllocsPerOp is the round's heap allocations per op.
func (r Round) AllocsPerOp() float64 {
	if r.Ops == 0 {
		return math.NaN()
	}
	return float64(r.Mallocs) / float64(r.Ops)
}

// MinMax is the ops of the least productive goroutine over those of the
// most: 1 when all were served alike; NaN without ops.
func (r Round) MinMax() float64 {
	if r.MaxWorkerOps == 0 {
		return math.NaN()
	}
	return float64(r.MinWorkerOps) / float64(r.MaxWorkerOps)
}

// Jain is Jain's fairness index of the op counts xs: (Σx)² / (n·Σx²), 1
// when all are equal, 1/n when one goroutine did everything; NaN for none.
func Jain(xs []int64) float64 {
	var sum, sq float64
	for _, x := range xs {
		sum += float64(x)
		sq += float64(x) * float64(x)
	}
	if sq == 0 {
		return math.NaN()
	}
	return sum * sum / (float64(len(xs)) * sq)
}

// Summary is what the tables show of one contender.
type Summary struct {
	Name        string
	Rounds      int
	Best        float64 // ns/op of the fastest round
	Median      float64 // ns/op, median round
	Slowest     float64 // ns/op of the slowest round
	OpsPerSec   float64 // from the median round
	AllocsPerOp float64 // median over the rounds
	Errors      int64   // over all rounds
	Latency     *Latency
	Dials       float64   // median over the rounds (0 where the case does not count them)
	TimeWait    *TimeWait // of the round that left the median number; nil where not counted
	// Reference says that this is the contender the others are tested
	// against: poolkit (see Case.Reference).
	Reference bool
	// Floor says that this is sync.Pool in an object-pool case: the floor,
	// not a competitor (see Case.FloorBaseline).
	Floor bool
	// Vs is the rank test of this contender's ns/op against the
	// reference's, round by round; nil for the reference itself or where
	// either has no rounds.
	Vs *Verdict
	// P99Vs is the same test of the worst goroutine's p99; nil where the
	// case does not record latency.
	P99Vs *Verdict
	// Waste (cap/len) and Retained (bytes) are medians over the rounds;
	// NaN where the case does not record memory.
	Waste, Retained float64
	// Jain and MinMax are medians over the rounds of Jain's index and of
	// the least productive goroutine's ops over the most's; NaN where the
	// case does not record fairness.
	Jain, MinMax float64
}

// Spread is the distance between the slowest and the fastest round.
func (s Summary) Spread() float64 { return s.Slowest - s.Best }

// NsPerOps is the ns/op of each round of c, in round order.
func NsPerOps(c Contender) []float64 {
	xs := make([]float64, len(c.Rounds))
	for i, r := range c.Rounds {
		xs[i] = r.NsPerOp()
	}
	return xs
}

// P99s is the worst goroutine's p99 of each round of c that recorded
// latency.
func P99s(c Contender) []float64 {
	var xs []float64
	for _, r := range c.Rounds {
		if r.Latency != nil {
			xs = append(xs, r.Latency.P99)
		}
	}
	return xs
}

// Summarize derives a contender's summary from its rounds (without the
// comparison with the baseline: see Case.Summaries).
func Summarize(c Contender) Summary {
	s := Summary{Name: c.Name, Rounds: len(c.Rounds), Dials: math.NaN(), Waste: math.NaN(), Retained: math.NaN(),
		Jain: math.NaN(), MinMax: math.NaN()}
	if len(c.Rounds) == 0 {
		s.Best, s.Median, s.Slowest, s.OpsPerSec, s.AllocsPerOp = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		return s
	}
	var x series
	for _, r := range c.Rounds {
		x.add(r)
		s.Errors += r.Errors
	}
	s.Best, s.Slowest = slices.Min(x.ns), slices.Max(x.ns)
	s.Median = Median(x.ns)
	s.OpsPerSec = 1e9 / s.Median
	s.AllocsPerOp = Median(x.allocs)
	s.Dials = Median(x.dials)
	if len(x.lats) > 0 {
		s.Latency = medianLatency(x.lats)
	}
	if len(x.waste) > 0 {
		s.Waste, s.Retained = Median(x.waste), Median(x.retained)
	}
	if len(x.jain) > 0 {
		s.Jain, s.MinMax = Median(x.jain), Median(x.minMax)
	}
	if len(x.tws) > 0 {
		// The lower median: a round that happened, not a mean of two.
		sort.SliceStable(x.tws, func(i, j int) bool { return x.tws[i].Left() < x.tws[j].Left() })
		s.TimeWait = &x.tws[(len(x.tws)-1)/2]
	}
	return s
}

// series are a contender's figures round by round, those a round did not
// record left out.
type series struct {
	ns, allocs, dials             []float64
	waste, retained, jain, minMax []float64
	lats                          []Latency
	tws                           []TimeWait
}

func (x *series) add(r Round) {
	x.ns = append(x.ns, r.NsPerOp())
	x.allocs = append(x.allocs, r.AllocsPerOp())
	x.dials = append(x.dials, float64(r.Dials))
	if r.Jain > 0 {
		x.jain = append(x.jain, r.Jain)
		x.minMax = append(x.minMax, r.MinMax())
	}
	if r.Asked > 0 {
		x.waste = append(x.waste, r.Waste())
		x.retained = append(x.retained, float64(r.Retained))
	}
	if r.Latency != nil {
		x.lats = append(x.lats, *r.Latency)
	}
	if r.TimeWait != nil {
		x.tws = append(x.tws, *r.TimeWait)
	}
}

// medianLatency is the median over the rounds of each percentile of the
// worst goroutine; Worker is that of the round with the median p99.
func medianLatency(ls []Latency) *Latency {
	pick := func(f func(Latency) float64) float64 {
		xs := make([]float64, len(ls))
		for i, l := range ls {
			xs[i] = f(l)
		}
		return Median(xs)
	}
	sorted := slices.Clone(ls)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].P99 < sorted[j].P99 })
	return &Latency{
		Worker: sorted[len(sorted)/2].Worker,
		P50:    pick(func(l Latency) float64 { return l.P50 }),
		P99:    pick(func(l Latency) float64 { return l.P99 }),
		P999:   pick(func(l Latency) float64 { return l.P999 }),
		Max:    pick(func(l Latency) float64 { return l.Max }),
	}
}

// Median returns the median of xs (the mean of the middle two for an even
// count); NaN for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// FloorName is the floor of the object-pool cases: sync.Pool.
const FloorName = "syncpool"

// FloorBaseline reports whether c's baseline is the floor rather than a
// competitor: an object-pool case compared with sync.Pool, which is not a
// bounded pool (no maximum, no waiting, emptied by the garbage collector)
// but the per-P fast path with nothing around it, the least a pool can
// cost. (For byte pools, pools built on sync.Pool are competitors.)
func (c Case) FloorBaseline() bool {
	return c.Baseline == FloorName && strings.HasPrefix(c.Name, "Pool/")
}

// Reference is the index of the contender the others are tested against:
// the first whose name starts with "poolkit", else the first; -1 for a case
// without contenders.
func (c Case) Reference() int {
	for i, k := range c.Contenders {
		if strings.HasPrefix(k.Name, "poolkit") {
			return i
		}
	}
	if len(c.Contenders) == 0 {
		return -1
	}
	return 0
}

// Summaries returns the summary of every contender of c, each but the
// reference tested against it (Compare) on ns/op and, where the case
// records latency, on the worst goroutine's p99.
func (c Case) Summaries() []Summary {
	out := make([]Summary, len(c.Contenders))
	for i, k := range c.Contenders {
		out[i] = Summarize(k)
		out[i].Floor = c.FloorBaseline() && k.Name == c.Baseline
	}
	ref := c.Reference()
	if ref < 0 {
		return out
	}
	out[ref].Reference = true
	refNs, refP99 := NsPerOps(c.Contenders[ref]), P99s(c.Contenders[ref])
	for i, k := range c.Contenders {
		if i == ref {
			continue
		}
		out[i].Vs = Compare(refNs, NsPerOps(k))
		if c.Latency {
			out[i].P99Vs = Compare(refP99, P99s(k))
		}
	}
	return out
}
