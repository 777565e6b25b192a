package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// headTable is one table of the headline: a few cases, one row each, one
// column per contender.
type headTable struct {
	title string
	// what says, in one sentence, what the table shows.
	what string
	// picks are the cases, by name prefix; of several matches, the one at
	// 4× GOMAXPROCS goroutines if there is one, else the one with the most.
	picks []string
	// rate says that the cells are requests per second, not ns per op.
	rate bool
}

// headTables are the headline's tables: eight rows with the faults row.
var headTables = []headTable{{
	title: "Object pools",
	what: "What one Acquire + Release costs alone, with 4× GOMAXPROCS goroutines on a pool of 8, and with 128 " +
		"goroutines on a pool of 8: median ns/op, lower is better; syncpool (sync.Pool) is the floor, not a competitor.",
	picks: []string{"Pool/HotPath", "Pool/Parallel/MaxSize=8/", "Pool/Oversubscribed/MaxSize=8/Goroutines=128/Work=0"},
}, {
	title: "Byte buffers",
	what: "What a 64 KiB buffer costs from each pool, untouched on one goroutine and written once per page " +
		"on 4× GOMAXPROCS goroutines: median ns/op, lower is better; make is what a program without a pool pays.",
	picks: []string{"Bytes/HotPath/Size=64KiB", "Bytes/Realistic/Size=64KiB/"},
}, {
	title: "End to end",
	what: "Requests per second when four times MaxSize goroutines share pools of MaxSize connections to PostgreSQL " +
		"(SELECT 1) and to Redis (PING) on this machine: median, higher is better; dedicated is one connection per goroutine and no pool.",
	picks: []string{"E2E/Server=postgres/Phase=oversubscribed", "E2E/Server=redis/Phase=oversubscribed"},
	rate:  true,
}}

// cellNote explains the cells of every headline table but the faults'.
const cellNote = "Each cell gives the median and, in parentheses, the fastest and slowest of the rounds; " +
	"the p99 of the worst goroutine where several run; and, against poolkit, the verdict of a Mann–Whitney U " +
	"test over the rounds (p < 0.05): *slower* and *faster* are the contender's, *indistinguishable* where " +
	"the test finds no difference."

// pickCases returns the cases of t found in cases, in the order of t.picks.
func (t headTable) pickCases(cases []results.Case, preferWorkers int) []results.Case {
	var out []results.Case
	for _, prefix := range t.picks {
		var best *results.Case
		for i, c := range cases {
			if !strings.HasPrefix(c.Name+"/", prefix) && !strings.HasPrefix(c.Name, prefix) {
				continue
			}
			if best == nil || best.Workers != preferWorkers && (c.Workers == preferWorkers || c.Workers > best.Workers) {
				best = &cases[i]
			}
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	return out
}

// columns are the contenders of picked, the reference first, in order of
// first appearance.
func columns(picked []results.Case) []string {
	var cols []string
	for _, c := range picked {
		for _, k := range c.Contenders {
			if !slices.Contains(cols, k.Name) {
				cols = append(cols, k.Name)
			}
		}
	}
	return cols
}

// writeHeadline writes the headline tables of f, each with its sentence,
// the tally of its verdicts, and the faults row where f has faults; pages
// is the way from the page it goes into to the pages' directory.
func writeHeadline(w io.Writer, f results.File, pages string) {
	fmt.Fprintf(w, "%s\n", cellNote)
	prefer := 4 * f.Machine.GOMAXPROCS
	for _, t := range headTables {
		picked := t.pickCases(f.Cases, prefer)
		if len(picked) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n**%s.** %s\n", t.title, t.what)
		writeHeadTable(w, picked, t.rate)
		if tally := tallySentence(picked); tally != "" {
			fmt.Fprintf(w, "\n%s\n", tally)
		}
	}
	if f.Faults != nil {
		writeFaultsHeadline(w, *f.Faults, pages)
	}
}

// writeHeadTable writes one row per case, one column per contender.
func writeHeadTable(w io.Writer, picked []results.Case, rate bool) {
	cols := columns(picked)
	fmt.Fprintf(w, "\n| workload | %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)+1))
	for _, c := range picked {
		sums := map[string]results.Summary{}
		for _, s := range c.Summaries() {
			sums[s.Name] = s
		}
		row := []string{fmt.Sprintf("%s (%d goroutine%s)", c.Name, c.Workers, plural(c.Workers))}
		for _, name := range cols {
			s, ok := sums[name]
			if !ok {
				row = append(row, "—")
				continue
			}
			row = append(row, headCell(c, s, rate))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}

// headCell is one contender's cell: the median and the range of the
// rounds, the worst goroutine's p99 where several goroutines run, and the
// verdict against poolkit.
func headCell(c results.Case, s results.Summary, rate bool) string {
	fig := results.MedianRange(s)
	if rate {
		fig = results.RateRange(s) + "/s"
	}
	if s.Reference {
		fig = "**" + fig + "**"
	}
	lines := []string{fig}
	if c.Workers > 1 && s.Latency != nil {
		lines = append(lines, "p99 "+results.Nanos(s.Latency.P99))
	}
	var verdict []string
	if s.Floor {
		verdict = append(verdict, "floor")
	}
	if v := shortVerdict(s.Vs, "slower", "faster"); v != "" {
		verdict = append(verdict, v)
	}
	if c.Workers > 1 {
		if v := shortVerdict(s.P99Vs, "higher", "lower"); v != "" {
			verdict = append(verdict, "p99 "+v)
		}
	}
	if len(verdict) > 0 {
		lines = append(lines, strings.Join(verdict, ", "))
	}
	return strings.Join(lines, "<br>")
}

// shortVerdict words a verdict in a few words: "3.36× slower",
// "indistinguishable"; "" for none.
func shortVerdict(v *results.Verdict, more, less string) string {
	switch {
	case v == nil || math.IsNaN(v.Ratio):
		return ""
	case !v.Decided():
		return results.TooFewRounds
	case !v.Differs:
		return "indistinguishable"
	case v.Ratio >= 1:
		return fmt.Sprintf("%s× %s", results.Ratio3(v.Ratio), more)
	}
	return fmt.Sprintf("%s× %s", results.Ratio3(1/v.Ratio), less)
}

// tallySentence counts, over the cells of picked, where poolkit is faster
// than a competitor, where it is slower and where the test cannot tell, and
// names every loss, the worst goroutine's p99 included; the floor and
// poolkit's own variants (pgxmanager, a keyed pool) are left out of the
// count, and the sentence says so.
func tallySentence(picked []results.Case) string {
	var won, tied, untested int
	var lost, tailLost, own []string
	for _, c := range picked {
		for _, s := range c.Summaries() {
			if s.Reference || s.Floor || s.Vs == nil {
				continue
			}
			if poolkitFamily(s.Name) {
				if !slices.Contains(own, s.Name) {
					own = append(own, s.Name)
				}
				continue
			}
			switch v := s.Vs; {
			case !v.Decided():
				untested++
			case !v.Differs:
				tied++
			case v.Ratio > 1:
				won++
			default:
				lost = append(lost, fmt.Sprintf("against %s on %s (%s %s× faster)", s.Name, c.Name, s.Name, results.Ratio3(1/v.Ratio)))
			}
			if v := s.P99Vs; c.Workers > 1 && v != nil && v.Differs && v.Ratio < 1 {
				tailLost = append(tailLost, fmt.Sprintf("%s's on %s (%s×)", s.Name, c.Name, results.Ratio3(1/v.Ratio)))
			}
		}
	}
	n := won + tied + len(lost)
	if n == 0 {
		if untested > 0 {
			return "The rounds were too few for the rank test to tell any contender from poolkit."
		}
		return ""
	}
	out := fmt.Sprintf("Against its competitors poolkit is faster in %d of %d cells, indistinguishable in %d, and slower in %d",
		won, n, tied, len(lost))
	if len(lost) > 0 {
		out += ": " + listOf(lost)
	}
	out += "."
	if len(tailLost) > 0 {
		out += " Its worst goroutine's p99 is higher than " + listOf(tailLost) + "."
	} else {
		out += " No competitor's worst-goroutine p99 is lower than poolkit's by the test."
	}
	switch len(own) {
	case 0:
	case 1:
		out += " poolkit's own " + own[0] + " is not counted."
	default:
		out += " poolkit's own " + listOf(own) + " are not counted."
	}
	return out
}

// listOf joins items: "a", "a and b", "a, b and c".
func listOf(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
