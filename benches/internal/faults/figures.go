package faults

import (
	"math"
	"slices"
	"time"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// record is one operation: when it started, from the start of the load,
// how long it took, and whether it failed.
type record struct {
	start, dur time.Duration
	failed     bool
}

// timeline is what a run's figures are computed from.
type timeline struct {
	records              []record
	faultStart, faultEnd time.Duration
	loadEnd              time.Duration // when the last operation could start
	bucket               time.Duration
}

// figures computes the round's figures but those the run counts itself
// (connections, stuck operations, the first error).
func (t timeline) figures() results.FaultRound {
	r := results.FaultRound{
		Ops: int64(len(t.records)), FaultStartNs: t.faultStart.Nanoseconds(), FaultEndNs: t.faultEnd.Nanoseconds(),
	}
	var tail []float64
	for _, k := range t.records {
		if k.failed {
			r.Failed++
			if k.start >= t.faultEnd {
				r.FailedAfter++
			}
		}
		if k.start >= t.faultStart {
			tail = append(tail, float64(k.dur.Nanoseconds()))
		}
	}
	r.P999Ns, r.MaxNs = -1, -1
	if len(tail) > 0 {
		r.P999Ns, r.MaxNs = quantile(tail, 0.999), quantile(tail, 1)
	}
	r.Throughput = t.throughput()
	r.BaselineOpsPerSec = t.baseline(r.Throughput)
	r.RecoveryNs = t.recovery(r.Throughput, r.BaselineOpsPerSec)
	return r
}

// throughput counts the successful operations completed in each bucket up
// to the end of the load.
func (t timeline) throughput() []int {
	n := int((t.loadEnd + t.bucket - 1) / t.bucket)
	out := make([]int, n)
	for _, k := range t.records {
		if i := int((k.start + k.dur) / t.bucket); !k.failed && i < n {
			out[i]++
		}
	}
	return out
}

// baseline is the rate of successful operations before the fault, per
// second, leaving out the first second (a third of the time before the
// fault if that is shorter), in which pools connect and warm up.
func (t timeline) baseline(tp []int) float64 {
	skip := min(time.Second, t.faultStart/3)
	lo, hi := int(skip/t.bucket), int(t.faultStart/t.bucket)
	if hi <= lo {
		return 0
	}
	sum := 0
	for _, n := range tp[lo:hi] {
		sum += n
	}
	return float64(sum) / (float64(hi-lo) * t.bucket.Seconds())
}

// recovery is the time from the fault's end to the first window of
// results.RecoveryWindow buckets, starting at or after it, whose rate is
// back to 90% of the baseline; -1 if none is.
func (t timeline) recovery(tp []int, baseline float64) int64 {
	if baseline == 0 {
		return -1
	}
	w := results.RecoveryWindow
	need := 0.9 * baseline * float64(w) * t.bucket.Seconds()
	for i := int((t.faultEnd + t.bucket - 1) / t.bucket); i+w <= len(tp); i++ {
		sum := 0
		for _, n := range tp[i : i+w] {
			sum += n
		}
		if float64(sum) >= need {
			return max(0, (time.Duration(i)*t.bucket - t.faultEnd).Nanoseconds())
		}
	}
	return -1
}

// quantile is the q-quantile of xs (the smallest x with at least a q share
// of xs at or below it); NaN for none.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
