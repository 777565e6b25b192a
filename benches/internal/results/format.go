package results

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes f as indented JSON.
func WriteJSON(w io.Writer, f File) error { return writeIndented(w, f) }

// writeIndented writes v as indented JSON.
func writeIndented(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// decodeStrict reads one JSON value into v, refusing fields v lacks.
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("results: %w", err)
	}
	return nil
}

// ReadJSON reads a results file written by WriteJSON.
func ReadJSON(r io.Reader) (File, error) {
	var f File
	if err := decodeStrict(r, &f); err != nil {
		return f, err
	}
	if f.Schema != Schema {
		return f, fmt.Errorf("results: schema %d, want %d", f.Schema, Schema)
	}
	return f, nil
}

// Nanos formats a duration in nanoseconds with three significant figures:
// "24.1 ns", "16.2 µs", "1.23 ms".
func Nanos(ns float64) string {
	switch {
	case math.IsNaN(ns):
		return "—"
	case ns < 999.5: // below what rounds to "1000 ns"
		return sig3(ns) + " ns"
	case ns < 999.5e3:
		return sig3(ns/1e3) + " µs"
	case ns < 999.5e6:
		return sig3(ns/1e6) + " ms"
	}
	return sig3(ns/1e9) + " s"
}

func sig3(x float64) string {
	switch {
	case x < 9.995: // below what %.2f rounds to 10.00
		return fmt.Sprintf("%.2f", x)
	case x < 99.95:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.0f", x)
}

// Rate formats ops per second: "41.3 M", "812 k".
func Rate(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case x >= 999.5e6:
		return sig3(x/1e9) + " G"
	case x >= 999.5e3:
		return sig3(x/1e6) + " M"
	case x >= 999.5:
		return sig3(x/1e3) + " k"
	}
	return sig3(x)
}

// Count formats a count with thousands separators: "12,345"; "—" for NaN.
// A fraction is rounded.
func Count(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	digits := fmt.Sprintf("%.0f", math.Abs(x))
	var b strings.Builder
	if x <= -0.5 {
		b.WriteByte('-')
	}
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

// Allocs formats allocations per op: "0", "1", "0.031".
func Allocs(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case x == math.Trunc(x):
		return fmt.Sprintf("%.0f", x)
	case x < 0.001:
		return "<0.001"
	case x < 0.01:
		return fmt.Sprintf("%.3f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// Ratio formats a ratio such as cap/len: "1.00", "1.27"; "—" for NaN.
func Ratio(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.2f", x)
}

// Bytes formats a byte count: "0 B", "512 B", "64.0 KiB", "1.25 GiB"; "—"
// for NaN.
func Bytes(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	u := 0
	for math.Abs(x) >= 1024 && u < len(units)-1 {
		x /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%.0f B", x)
	}
	return sig3(x) + " " + units[u]
}

// Comparison says how s compares with the reference (poolkit), by the
// rank test of its rounds against the reference's (Summary.Vs): "2.31×
// slower [2.20, 2.45]" or "3.10× faster [2.9, 3.3]" (the ratio of the
// times and its 95% confidence interval) where p < Alpha, else
// "indistinguishable (p = 0.31)"; "reference" for the reference, and
// "floor, " before the verdict of sync.Pool in an object-pool case.
func Comparison(s Summary) string {
	v := verdictText(s.Vs)
	switch {
	case s.Reference:
		return "reference"
	case s.Floor:
		return "floor, " + v
	}
	return v
}

// TooFewRounds is the verdict where the rounds were too few for the rank
// test to find any difference (fewer than MinRounds each).
const TooFewRounds = "too few rounds to test"

// verdictText words a verdict on times, where more is worse: "2.31×
// slower [2.20, 2.45]", "3.10× faster [2.90, 3.30]",
// "indistinguishable (p = 0.310)"; "—" for none.
func verdictText(v *Verdict) string {
	switch {
	case v == nil || math.IsNaN(v.Ratio):
		return "—"
	case !v.Decided():
		return TooFewRounds
	case !v.Differs:
		return "indistinguishable (" + v.PValue() + ")"
	case v.Ratio >= 1:
		return fmt.Sprintf("%s× slower %s", sig3(v.Ratio), v.Interval())
	}
	inv := Verdict{Lo: 1 / v.Hi, Hi: 1 / v.Lo}
	return fmt.Sprintf("%s× faster %s", sig3(1/v.Ratio), inv.Interval())
}

// P99Comparison words the rank test of the worst goroutine's p99 against
// the reference's: "2.31× higher [2.20, 2.45]", "0.5× …" as "2.00× lower
// […]", or "indistinguishable (p = …)"; "reference" and "—" as Comparison.
func P99Comparison(s Summary) string {
	v := s.P99Vs
	switch {
	case s.Reference:
		return "reference"
	case v == nil || math.IsNaN(v.Ratio):
		return "—"
	case !v.Decided():
		return TooFewRounds
	case !v.Differs:
		return "indistinguishable (" + v.PValue() + ")"
	case v.Ratio >= 1:
		return fmt.Sprintf("%s× higher %s", sig3(v.Ratio), v.Interval())
	}
	inv := Verdict{Lo: 1 / v.Hi, Hi: 1 / v.Lo}
	return fmt.Sprintf("%s× lower %s", sig3(1/v.Ratio), inv.Interval())
}

// MedianRange formats the median ns/op and, in parentheses, the spread of
// the rounds from the fastest to the slowest: "22.0 ns (20.0–30.0 ns)".
func MedianRange(s Summary) string {
	if math.IsNaN(s.Median) {
		return "—"
	}
	return fmt.Sprintf("%s (%s)", Nanos(s.Median), NanosRange(s.Best, s.Slowest))
}

// NanosRange formats a range of durations in one unit where both fit it:
// "20.0–30.0 ns", "980 ns–1.20 µs".
func NanosRange(lo, hi float64) string {
	a, b := Nanos(lo), Nanos(hi)
	ua, ub := a[strings.LastIndexByte(a, ' ')+1:], b[strings.LastIndexByte(b, ' ')+1:]
	if ua == ub {
		return strings.TrimSuffix(a, " "+ua) + "–" + b
	}
	return a + "–" + b
}

// RateRange formats the median ops/s and the spread of the rounds, slowest
// to fastest: "47.6 k (45.2–49.0 k)".
func RateRange(s Summary) string {
	if math.IsNaN(s.Median) {
		return "—"
	}
	lo, hi := Rate(1e9/s.Slowest), Rate(1e9/s.Best)
	return fmt.Sprintf("%s (%s–%s)", Rate(s.OpsPerSec), lo, hi)
}

// worstP99 is the worst goroutine's p99 of s, "—" without latency.
func worstP99(s Summary) string {
	if s.Latency == nil {
		return "—"
	}
	return Nanos(s.Latency.P99)
}

// Row is one contender's cells, in the order of Header.
func Row(c Case, s Summary) []string {
	row := []string{s.Name, Rate(s.OpsPerSec)}
	if c.Latency {
		row = append(row, worstP99(s))
	}
	row = append(row, MedianRange(s), Allocs(s.AllocsPerOp))
	if c.Latency {
		if l := s.Latency; l != nil {
			row = append(row, Nanos(l.P50), Nanos(l.P999), Nanos(l.Max))
		} else {
			row = append(row, "—", "—", "—")
		}
	}
	row = append(row, extraCells(c, s)...)
	cmp := Comparison(s)
	if s.Errors > 0 {
		cmp += fmt.Sprintf(" (%d ops failed)", s.Errors)
	}
	row = append(row, cmp)
	if c.Latency {
		row = append(row, P99Comparison(s))
	}
	return row
}

// extraCells are the cells of the columns only some cases have: dials,
// TIME_WAIT, memory and fairness.
func extraCells(c Case, s Summary) []string {
	var row []string
	if c.Dials {
		row = append(row, Count(s.Dials))
	}
	if c.TimeWait {
		if t := s.TimeWait; t != nil {
			row = append(row, fmt.Sprintf("%s → %s", Count(float64(t.Before)), Count(float64(t.After))))
		} else {
			row = append(row, "—")
		}
	}
	if c.Memory {
		row = append(row, Ratio(s.Waste), Bytes(s.Retained))
	}
	if c.Fairness {
		row = append(row, Ratio(s.Jain), Ratio(s.MinMax))
	}
	return row
}

// Header names the columns of Row.
func Header(c Case) []string {
	h := []string{"contender", "ops/s"}
	if c.Latency {
		h = append(h, "p99, worst goroutine")
	}
	h = append(h, "ns/op median (min–max)", "allocs/op")
	if c.Latency {
		h = append(h, "p50", "p99.9", "max")
	}
	if c.Dials {
		h = append(h, "dials")
	}
	if c.TimeWait {
		h = append(h, "TIME_WAIT before → after")
	}
	if c.Memory {
		h = append(h, "cap/len", "retained")
	}
	if c.Fairness {
		h = append(h, "Jain", "min/max")
	}
	ref := "poolkit"
	if i := c.Reference(); i >= 0 {
		ref = c.Contenders[i].Name
	}
	h = append(h, "ns/op vs "+ref)
	if c.Latency {
		h = append(h, "p99 vs "+ref)
	}
	return h
}

// Describe is one line on how a case was run: "8 goroutines; one op = one
// Acquire + Release; 5 rounds".
func Describe(c Case) string {
	g := "1 goroutine"
	if c.Workers != 1 {
		g = fmt.Sprintf("%d goroutines", c.Workers)
	}
	rounds := 0
	for _, k := range c.Contenders {
		rounds = max(rounds, len(k.Rounds))
	}
	s := g
	if c.Setup != "" {
		s += "; " + c.Setup
	}
	s += "; one op = " + c.Unit
	if c.Server != "" {
		s += "; against " + c.Server
	}
	s += fmt.Sprintf("; %d round%s", rounds, map[bool]string{true: "", false: "s"}[rounds == 1])
	if c.Latency {
		s += "; latency of the worst goroutine"
	}
	if c.Fairness {
		s += ", every op timed; Jain's index and min/max of the goroutines' op counts"
	}
	return s
}

// WriteText writes f as plain-text tables, one per case.
func WriteText(w io.Writer, f File) error {
	m := f.Machine
	fmt.Fprintf(w, "poolbench: %s, %d CPUs, GOMAXPROCS=%d, %s, %s, commit %s\n",
		m.CPU, m.Cores, m.GOMAXPROCS, m.GoVersion, m.Kernel, short(m.Commit))
	if len(f.Cases) > 0 || f.Settings.E2E != nil {
		fmt.Fprintf(w, "%s\n", settingsLine(f.Settings))
	} else { // the faults phase and the keyed case say how they ran
		fmt.Fprintf(w, "mode %s\n", f.Settings.Mode)
	}
	for _, s := range f.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", SkipLine(s))
	}
	for _, c := range f.Cases {
		fmt.Fprintf(w, "\n%s\n  %s\n", c.Name, Describe(c))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "  %s\n", strings.Join(Header(c), "\t"))
		for _, s := range c.Summaries() {
			fmt.Fprintf(tw, "  %s\n", strings.Join(Row(c, s), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if f.Faults != nil {
		if err := WriteFaultsText(w, *f.Faults); err != nil {
			return err
		}
	}
	if f.Keyed != nil {
		if err := WriteKeyedText(w, *f.Keyed); err != nil {
			return err
		}
	}
	if f.Interrupted {
		fmt.Fprintf(w, "\ninterrupted: the tables hold the rounds completed before the stop\n")
	}
	_, err := fmt.Fprintln(w)
	return err
}

// SkipLine says which server was skipped and why.
func SkipLine(s Skip) string {
	return fmt.Sprintf("%s, not measured: %s", s.Server, s.Reason)
}

// PerContender says how long each contender ran per round.
func PerContender(ops, durationNs int64) string {
	if ops > 0 {
		return fmt.Sprintf("%d ops per contender per round", ops)
	}
	return fmt.Sprintf("%v per contender per round", time.Duration(durationNs))
}

// settingsLine describes the run's settings.
func settingsLine(s Settings) string {
	if s.Mode == "e2e" && s.E2E != nil {
		return fmt.Sprintf("mode %s, %d rounds, %s, pools of MaxSize %d",
			s.Mode, s.Rounds, PerContender(s.E2E.Ops, s.E2E.DurationNs), s.E2E.MaxSize)
	}
	line := fmt.Sprintf("mode %s, %d rounds, %s", s.Mode, s.Rounds, PerContender(s.Ops, s.DurationNs))
	if s.Workers > 0 {
		line += fmt.Sprintf(", %d goroutines", s.Workers)
	}
	if s.E2E != nil {
		line += fmt.Sprintf("; end to end: %s, pools of MaxSize %d", PerContender(s.E2E.Ops, s.E2E.DurationNs), s.E2E.MaxSize)
	}
	return line
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// WriteMarkdownTable writes c as a markdown table, one row per contender.
func WriteMarkdownTable(w io.Writer, c Case) error {
	h := Header(c)
	fmt.Fprintf(w, "| %s |\n", strings.Join(h, " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(h)))
	for _, s := range c.Summaries() {
		if _, err := fmt.Fprintf(w, "| %s |\n", strings.Join(Row(c, s), " | ")); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown writes f as markdown: a heading and a table per case.
func WriteMarkdown(w io.Writer, f File) error {
	m := f.Machine
	fmt.Fprintf(w, "# poolbench results\n\n%s, %d CPUs, GOMAXPROCS=%d, %s, %s, commit %s, %s.\n",
		m.CPU, m.Cores, m.GOMAXPROCS, m.GoVersion, m.Kernel, short(m.Commit), m.Date)
	fmt.Fprintf(w, "%s.\n", settingsLine(f.Settings))
	for _, s := range f.Skipped {
		fmt.Fprintf(w, "\n*Skipped: %s.*\n", SkipLine(s))
	}
	for _, c := range f.Cases {
		fmt.Fprintf(w, "\n## %s\n\n%s.\n\n", c.Name, Describe(c))
		if err := WriteMarkdownTable(w, c); err != nil {
			return err
		}
	}
	if f.Interrupted {
		fmt.Fprintf(w, "\n*Interrupted: the tables hold the rounds completed before the stop.*\n")
	}
	return nil
}

// Ratio3 formats a ratio with three significant figures: "2.31", "10.5".
func Ratio3(x float64) string { return sig3(x) }

// dur formats nanoseconds as a time.Duration.
func dur(ns int64) time.Duration { return time.Duration(ns) }
