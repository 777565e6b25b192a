package results

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
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
	// operations, the first second of load left out); 0 if the fault
	// started too early to measure one.
	BaselineOpsPerSec float64 `json:"baseline_ops_per_sec"`
	// RecoveryNs is the time from the fault's end until the throughput,
	// over a window of five buckets, was back to 90% of the baseline; -1 if
	// it never was before the run ended.
	RecoveryNs int64 `json:"recovery_ns"`
	// P999Ns and MaxNs are the latency of the operations that started at
	// or after the fault's start and returned, failed ones included; -1 if
	// none returned (the stuck ones are counted in Stuck).
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
		if k.MaxNs >= 0 {
			p999 = append(p999, k.P999Ns)
			mx = append(mx, k.MaxNs)
		}
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

// Seconds formats a duration in seconds: "0.40 s", "never" for +Inf.
func Seconds(s float64) string {
	switch {
	case math.IsNaN(s):
		return "—"
	case math.IsInf(s, 1):
		return "never"
	}
	return sig3(s) + " s"
}

// SpreadCell formats a spread with f: "12 (10–15)"; the median alone where
// the rounds agree.
func SpreadCell(s Spread, f func(float64) string) string {
	if math.IsNaN(s.Median) {
		return "—"
	}
	if s.Min == s.Max {
		return f(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.Median), f(s.Min), f(s.Max))
}

// FaultHeader names the columns of FaultRow.
var FaultHeader = []string{"server", "contender", "operations", "failed", "failed after the fault ended",
	"back to 90%", "p99.9", "max", "most connections", "stuck at the end", "first error"}

// FaultRow is the cells of one contender through one fault; markdown
// escapes the error's pipes.
func FaultRow(r FaultResult, markdown bool) []string {
	s := r.Summarize()
	first := ScrubPaths(s.FirstError)
	if len(first) > 80 {
		first = first[:77] + "…"
	}
	if markdown {
		first = strings.ReplaceAll(first, "|", "\\|")
	}
	if first == "" {
		first = "—"
	}
	return []string{r.Server, r.Contender, SpreadCell(s.Ops, Count), SpreadCell(s.Failed, Count),
		SpreadCell(s.FailedAfter, Count), SpreadCell(s.Recovery, Seconds), SpreadCell(s.P999, Nanos),
		SpreadCell(s.Max, Nanos), SpreadCell(s.MaxConns, Count), SpreadCell(s.Stuck, Count), first}
}

// WriteFaultsText writes the faults phase as one plain-text table per
// fault.
func WriteFaultsText(w io.Writer, fs Faults) error {
	st := fs.Settings
	fmt.Fprintf(w, "\nfaults: %d goroutines, pools of %d, %v deadline; fault at %v, lasting %v, %v of load after it; %d round(s)\n",
		st.Workers, st.MaxSize, dur(st.DeadlineNs), dur(st.BeforeNs), dur(st.HoldNs), dur(st.AfterNs), st.Rounds)
	for _, s := range fs.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", SkipLine(s))
	}
	var faults []string
	for _, r := range fs.Results {
		if !slices.Contains(faults, r.Fault) {
			faults = append(faults, r.Fault)
		}
	}
	for _, f := range faults {
		fmt.Fprintf(w, "\nFaults/%s\n", f)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  %s\n", strings.Join(FaultHeader, "\t"))
		for _, r := range fs.Results {
			if r.Fault == f {
				fmt.Fprintf(tw, "  %s\n", strings.Join(FaultRow(r, false), "\t"))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
