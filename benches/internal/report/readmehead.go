package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// readmeHeadline writes the README's headline: one table with a row per
// case of the headline tables (headTables), poolkit's median against its
// nearest competitor's in that row, with the rank test's verdict; then the
// faults row; then the tally over every competitor of those rows.
// docs/BENCHMARKS.md has the full tables (writeHeadline): the README gives
// fewer cells, and the link.
func readmeHeadline(w io.Writer, f results.File, pages string) {
	fmt.Fprintln(w, "Medians of alternating rounds, with the worst goroutine's p99 where several run; *poolkit is* gives "+
		"the verdict of a Mann–Whitney U test (p < 0.05) against the competitor that did best in the row (the floor, "+
		"sync.Pool, and poolkit's own variants left out).")
	fmt.Fprintf(w, "\n| workload | poolkit | best competitor | poolkit is |\n|---|---|---|---|\n")
	prefer := 4 * f.Machine.GOMAXPROCS
	var all []results.Case
	for _, t := range headTables {
		picked := t.pickCases(f.Cases, prefer)
		all = append(all, picked...)
		for _, c := range picked {
			if row, ok := readmeRow(c, t.rate); ok {
				fmt.Fprintln(w, row)
			}
		}
	}
	if f.Faults != nil {
		if row, ok := faultsReadmeRow(*f.Faults); ok {
			fmt.Fprintln(w, row)
		}
	}
	if tally := tallySentence(all); tally != "" {
		fmt.Fprintf(w, "\n%s The faults, the keyed pool, the growable buffer and every other group: [docs/BENCHMARKS.md](docs/BENCHMARKS.md).\n", tally)
	}
}

// readmeRow is c's row: poolkit's median and the best competitor's, and
// the verdict in poolkit's words.
func readmeRow(c results.Case, rate bool) (string, bool) {
	var ref, best *results.Summary
	sums := c.Summaries()
	for i, s := range sums {
		switch {
		case s.Reference:
			ref = &sums[i]
		case s.Floor || poolkitFamily(s.Name) || s.Vs == nil:
		case best == nil || s.Median < best.Median:
			// A rate's summary holds ns per request too: the lowest median
			// is the fastest either way.
			best = &sums[i]
		}
	}
	if ref == nil || best == nil {
		return "", false
	}
	fig := func(s results.Summary) string {
		if rate {
			return results.RateRange(s) + "/s"
		}
		return results.MedianRange(s)
	}
	fig0 := func(s results.Summary) string {
		f := strings.SplitN(fig(s), " (", 2)[0]
		if rate {
			f += "/s"
		}
		if c.Workers > 1 && s.Latency != nil {
			f += ", p99 " + results.Nanos(s.Latency.P99)
		}
		return f
	}
	verdict := ""
	switch v := best.Vs; {
	case v == nil || math.IsNaN(v.Ratio):
	case !v.Decided():
		verdict = results.TooFewRounds
	case !v.Differs:
		verdict = "indistinguishable"
	case v.Ratio >= 1:
		verdict = fmt.Sprintf("%s× faster", results.Ratio3(v.Ratio))
	default:
		verdict = fmt.Sprintf("%s× slower", results.Ratio3(1/v.Ratio))
	}
	if v := best.P99Vs; c.Workers > 1 && v != nil && v.Decided() && v.Differs {
		word := "lower"
		ratio := v.Ratio
		if ratio < 1 {
			word, ratio = "higher", 1/ratio
		}
		verdict += fmt.Sprintf(", p99 %s× %s", results.Ratio3(ratio), word)
	}
	return fmt.Sprintf("| %s, %d goroutine%s | **%s** | %s %s | %s |",
		c.Name, c.Workers, plural(c.Workers), fig0(*ref), best.Name, fig0(*best), verdict), true
}

// faultsReadmeRow is the faults' row: pgxmanager's failures after the
// faults and slowest recovery, against pgxpool's.
func faultsReadmeRow(fs results.Faults) (string, bool) {
	cols := faultContenders(fs)
	if !slices.Contains(cols, "pgxmanager") || !slices.Contains(cols, "pgxpool") {
		return "", false
	}
	cell := func(name string) string {
		var failed, worst float64
		for _, r := range fs.Results {
			if r.Contender == name {
				s := r.Summarize()
				failed += s.FailedAfter.Median
				worst = max(worst, s.Recovery.Median)
			}
		}
		back := results.Seconds(worst)
		if math.IsInf(worst, 1) {
			back = "never"
		}
		return fmt.Sprintf("%s failed after, 90%% in %s", results.Count(failed), back)
	}
	return fmt.Sprintf("| %d PostgreSQL and Redis faults, %d goroutines, pool of %d | **pgxmanager: %s** | pgxpool: %s | [faults page](docs/%s/faults.md) |",
		len(faultsOf(fs)), fs.Settings.Workers, fs.Settings.MaxSize, cell("pgxmanager"), cell("pgxpool"), ChartDir), true
}
