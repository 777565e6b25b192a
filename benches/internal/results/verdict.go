package results

import (
	"fmt"
	"math"
	"slices"

	"github.com/aclements/go-moremath/stats"
	"golang.org/x/perf/benchmath"
)

// Alpha is the level below which the rank test calls two contenders
// different: p < Alpha.
const Alpha = 0.05

// Confidence is the level of the confidence interval of a ratio.
const Confidence = 0.95

// MinRounds is the fewest rounds per contender at which the rank test can
// reach p < Alpha at all (5 against 5: p ≥ 0.0079); poolbench runs 10 by
// default, enough for it to have power.
const MinRounds = 5

// Verdict is the rank test of one contender against a reference (poolkit,
// the first contender of a case) over the rounds of both: the
// Mann–Whitney U test, as benchstat runs it (golang.org/x/perf/benchmath's
// AssumeNothing), and the ratio of the contender's figure to the
// reference's with its confidence interval.
type Verdict struct {
	// P is the two-sided p-value of the U test: the chance of rounds at
	// least this far apart if both came from one distribution.
	P float64
	// Differs is P < Alpha: only then do the tables call one faster.
	Differs bool
	// Ratio is the contender's figure over the reference's: the
	// Hodges–Lehmann estimate, the median of the ratios of every pair of
	// rounds (one of each). Lo and Hi bound it with Confidence; they are
	// ±Inf where the rounds are too few for an interval.
	Ratio, Lo, Hi float64
	// N1 and N2 are the rounds of the reference and of the contender.
	N1, N2 int
	// Warning, if not "", is benchmath's: too few rounds to detect a
	// difference.
	Warning string
}

// Compare runs the rank test of xs (a contender's rounds) against ref (the
// reference's). Both hold one figure per round (ns/op, or a p99); NaNs are
// left out. It returns nil if either has no figure.
func Compare(ref, xs []float64) *Verdict {
	ref, xs = finite(ref), finite(xs)
	if len(ref) == 0 || len(xs) == 0 {
		return nil
	}
	thr := benchmath.DefaultThresholds
	thr.CompareAlpha = Alpha
	cmp := benchmath.AssumeNothing.Compare(benchmath.NewSample(ref, &thr), benchmath.NewSample(xs, &thr))
	v := &Verdict{P: cmp.P, Differs: cmp.P < Alpha, N1: cmp.N1, N2: cmp.N2}
	if len(cmp.Warnings) > 0 {
		v.Warning = cmp.Warnings[0].Error()
	}
	v.Ratio, v.Lo, v.Hi = ratioCI(ref, xs, Confidence)
	return v
}

// finite returns the figures of xs that are neither NaN nor infinite, in a
// new slice.
func finite(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	return out
}

// ratioCI returns the Hodges–Lehmann estimate of the ratio xs/ref and its
// distribution-free confidence interval at level conf, the one that goes
// with the U test (Bauer, 1972): of the n·m ratios x/r of every pair, sorted,
// the interval runs from the (c+1)-th to the (n·m−c)-th, where c is the
// largest count with P(U ≤ c) ≤ (1−conf)/2 under the U distribution of n and
// m rounds. Figures must be positive; where c does not exist the interval
// is unbounded.
func ratioCI(ref, xs []float64, conf float64) (est, lo, hi float64) {
	logs := make([]float64, 0, len(ref)*len(xs))
	for _, r := range ref {
		for _, x := range xs {
			if r <= 0 || x <= 0 {
				return math.NaN(), math.Inf(-1), math.Inf(1)
			}
			logs = append(logs, math.Log(x/r))
		}
	}
	slices.Sort(logs)
	est = math.Exp(Median(logs))
	u := stats.UDist{N1: len(ref), N2: len(xs)}
	tail := (1 - conf) / 2
	c := -1
	for k := 0; k < len(logs)/2; k++ {
		if u.CDF(float64(k)) > tail {
			break
		}
		c = k
	}
	if c < 0 {
		return est, math.Inf(-1), math.Inf(1)
	}
	return est, math.Exp(logs[c]), math.Exp(logs[len(logs)-1-c])
}

// Decided reports whether the test could have told the two apart: it
// found a difference, or had rounds enough to find one (benchmath warns
// when even rounds maximally apart could not reach p < Alpha).
func (v Verdict) Decided() bool { return v.Differs || v.Warning == "" }

// Interval formats the confidence interval of v: "[2.10, 2.45]", "[?]"
// where the rounds were too few for one.
func (v Verdict) Interval() string {
	if math.IsInf(v.Lo, 0) || math.IsInf(v.Hi, 0) {
		return "[no interval: too few rounds]"
	}
	return fmt.Sprintf("[%s, %s]", sig3(v.Lo), sig3(v.Hi))
}

// PValue formats P: "p = 0.003", "p < 0.001".
func (v Verdict) PValue() string {
	if v.P < 0.001 {
		return "p < 0.001"
	}
	return fmt.Sprintf("p = %.3f", v.P)
}
