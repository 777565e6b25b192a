package results

import (
	"math"
	"slices"
)

// Faults is the faults phase of a run (poolbench -mode=faults): clients
// under steady load through a server's fault, one fault at a time.
type Faults struct {
	Settings FaultSettings `json:"settings"`
	// Servers describes the private servers the phase started.
	Servers []FaultServer `json:"servers"`
	// Results holds one entry per fault, server and contender, in the order
	// they ran.
	Results []FaultResult `json:"results"`
	// Skipped lists the servers the phase could not start, and why.
	Skipped []Skip `json:"skipped,omitempty"`
}

// FaultSettings shaped the faults phase.
type FaultSettings struct {
	Workers int `json:"workers"`  // goroutines running operations
	MaxSize int `json:"max_size"` // of every pool
	// DeadlineNs bounds every operation (a context deadline).
	DeadlineNs int64 `json:"deadline_ns"`
	// BeforeNs is the load before the fault; the fault starts then.
	BeforeNs int64 `json:"before_ns"`
	// HoldNs is how long a lasting fault lasts (partition, SIGSTOP, added
	// latency); a kill lasts as long as its statement, a restart as long as
	// the server takes to stop and start.
	HoldNs int64 `json:"hold_ns"`
	// AfterNs is the load after the fault has ended.
	AfterNs int64 `json:"after_ns"`
	// GraceNs is how long the run waits, once it stops starting operations,
	// for those in flight; what is left then is stuck.
	GraceNs int64 `json:"grace_ns"`
	// BucketNs is the width of a throughput sample.
	BucketNs int64 `json:"bucket_ns"`
	// LatencyNs is the latency the latency fault adds to every reply.
	LatencyNs int64 `json:"latency_ns"`
	Rounds    int   `json:"rounds"`
}

// FaultServer is a private server of the faults phase.
type FaultServer struct {
	Server   string `json:"server"`   // "postgres", "redis"
	Describe string `json:"describe"` // "PostgreSQL 15.19, a private instance on 127.0.0.1"
}

// FaultResult is one contender through one fault of one server.
type FaultResult struct {
	Fault     string       `json:"fault"`  // "kill", "restart", "partition", "sigstop", "latency"
	Server    string       `json:"server"` // "postgres", "redis"
	Contender string       `json:"contender"`
	Setup     string       `json:"setup"` // how the contender was configured
	Rounds    []FaultRound `json:"rounds"`
}

// FaultRound is one run of a contender through a fault, timed from the
// start of the load.
type FaultRound struct {
	Ops int64 `json:"ops"` // operations started
	// Failed is the operations that returned an error; FailedAfter those of
	// them that started after the fault had ended.
	Failed      int64 `json:"failed"`
	FailedAfter int64 `json:"failed_after"`
	// FaultStartNs and FaultEndNs bound the fault.
	FaultStartNs int64 `json:"fault_start_ns"`
	FaultEndNs   int64 `json:"fault_end_ns"`
	// BaselineOpsPerSec is the throughput before the fault (successful
	// operations, the first second of load left out).
	BaselineOpsPerSec float64 `json:"baseline_ops_per_sec"`
	// RecoveryNs is the time from the fault's end until the throughput,
	// over a window of five buckets, was back to 90% of the baseline; -1 if
	// it never was before the run ended.
	RecoveryNs int64 `json:"recovery_ns"`
	// P999Ns and MaxNs are the latency of the operations that started at
	// or after the fault's start, failed ones included.
	P999Ns float64 `json:"p999_ns"`
	MaxNs  float64 `json:"max_ns"`
	// MaxConns is the most connections open to the server at once,
	// counted at the proxy in front of it.
	MaxConns int `json:"max_conns"`
	// Stuck is the operations still running when the grace period after
	// the load ended.
	Stuck int `json:"stuck"`
	// Throughput is the successful operations completed in each bucket of
	// FaultSettings.BucketNs, from the start of the load.
	Throughput []int `json:"throughput"`
	// FirstError is the text of the first error, if any.
	FirstError string `json:"first_error,omitempty"`
}

// FaultSummary is what the tables show of a FaultResult: medians over the
// rounds, and the range where there are several.
type FaultSummary struct {
	Rounds               int
	Failed, FailedAfter  Spread
	Recovery             Spread // seconds; +Inf for a round that never recovered
	P999, Max            Spread // ns
	MaxConns, Stuck, Ops Spread
	NeverRecovered       int // rounds
	FirstError           string
	FaultLasted          Spread // ns: how long the fault lasted
}

// Spread is a median and the range of the rounds.
type Spread struct{ Median, Min, Max float64 }

// spreadOf summarises xs; NaN for none.
func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{math.NaN(), math.NaN(), math.NaN()}
	}
	return Spread{Median(xs), slices.Min(xs), slices.Max(xs)}
}

// Summarize summarises r over its rounds.
func (r FaultResult) Summarize() FaultSummary {
	var failed, after, rec, p999, mx, conns, stuck, ops, lasted []float64
	s := FaultSummary{Rounds: len(r.Rounds)}
	for _, k := range r.Rounds {
		failed = append(failed, float64(k.Failed))
		after = append(after, float64(k.FailedAfter))
		if k.RecoveryNs < 0 {
			s.NeverRecovered++
			rec = append(rec, math.Inf(1))
		} else {
			rec = append(rec, float64(k.RecoveryNs)/1e9)
		}
		p999 = append(p999, k.P999Ns)
		mx = append(mx, k.MaxNs)
		conns = append(conns, float64(k.MaxConns))
		stuck = append(stuck, float64(k.Stuck))
		ops = append(ops, float64(k.Ops))
		lasted = append(lasted, float64(k.FaultEndNs-k.FaultStartNs))
		if s.FirstError == "" {
			s.FirstError = k.FirstError
		}
	}
	s.Failed, s.FailedAfter, s.Recovery = spreadOf(failed), spreadOf(after), spreadOf(rec)
	s.P999, s.Max, s.MaxConns, s.Stuck, s.Ops = spreadOf(p999), spreadOf(mx), spreadOf(conns), spreadOf(stuck), spreadOf(ops)
	s.FaultLasted = spreadOf(lasted)
	return s
}

// RecoveryWindow is the number of throughput buckets over which a
// recovery is judged: the rate over that many must be back to 90% of the
// baseline.
const RecoveryWindow = 5
