package results

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Icount is a run of poolbench icount: the instructions and heap
// allocations of one operation of each contender, counted under callgrind.
// A results file holds one (File.Icount); the CI baseline is one on its own.
type Icount struct {
	Command string  `json:"command"`
	Machine Machine `json:"machine"`
	// Valgrind is `valgrind --version`.
	Valgrind string `json:"valgrind"`
	// N1 and N2 are the op counts of the two runs of each contender; the
	// figures are the differences of their totals divided by N2 - N1.
	N1 int `json:"n1"`
	N2 int `json:"n2"`
	// Ops are the figures, in the order they were measured.
	Ops []IcountOp `json:"ops"`
}

// IcountOp is the cost of one operation of one contender.
type IcountOp struct {
	// Name identifies the op: "Pool/Impl=poolkit",
	// "Bytes/Size=4KiB/Impl=syncpool".
	Name string `json:"name"`
	// Table groups the ops shown together: "Pool", "Bytes/Size=4KiB".
	Table     string `json:"table"`
	Contender string `json:"contender"`
	Unit      string `json:"unit"` // "Acquire + Release"
	// Instructions per op (callgrind's Ir) and heap allocations per op.
	Instructions float64 `json:"instructions"`
	Allocs       float64 `json:"allocs"`
}

// Find returns the op called name, if r has it.
func (r Icount) Find(name string) (IcountOp, bool) {
	for _, o := range r.Ops {
		if o.Name == name {
			return o, true
		}
	}
	return IcountOp{}, false
}

// Tables returns the names of r's tables in the order of their first op.
func (r Icount) Tables() []string {
	var ts []string
	for _, o := range r.Ops {
		if !slices.Contains(ts, o.Table) {
			ts = append(ts, o.Table)
		}
	}
	return ts
}

// IcountFloor names, for each table, the op the others are compared with:
// sync.Pool, the floor of the object pools, and the sync.Pool byte pool.
const IcountFloor = "syncpool"

// IcountRows returns the rows of table: contender, instructions/op,
// allocs/op, and the ratio to the table's syncpool op ("—" without one).
func (r Icount) IcountRows(table string) [][]string {
	floor := math.NaN()
	for _, o := range r.Ops {
		if o.Table == table && o.Contender == IcountFloor {
			floor = o.Instructions
		}
	}
	var rows [][]string
	for _, o := range r.Ops {
		if o.Table != table {
			continue
		}
		ratio := "—"
		switch {
		case o.Contender == IcountFloor:
			ratio = "floor"
		case !math.IsNaN(floor) && floor > 0:
			ratio = sig3(o.Instructions/floor) + "×"
		}
		rows = append(rows, []string{o.Contender, Count(o.Instructions), Allocs(o.Allocs), ratio})
	}
	return rows
}

// IcountHeader names the columns of IcountRows.
var IcountHeader = []string{"contender", "instructions/op", "allocs/op", "vs syncpool"}

// WriteIcountText writes r as plain-text tables, one per table.
func WriteIcountText(w io.Writer, r Icount) error {
	m := r.Machine
	fmt.Fprintf(w, "poolbench icount: %s, %s, %s, commit %s; %s; ops %d and %d\n",
		m.CPU, m.GoVersion, r.Valgrind, short(m.Commit), IcountEnv, r.N1, r.N2)
	for _, t := range r.Tables() {
		fmt.Fprintf(w, "\n%s (one op = %s)\n", t, r.unit(t))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  %s\t\n", strings.Join(IcountHeader, "\t"))
		for _, row := range r.IcountRows(t) {
			fmt.Fprintf(tw, "  %s\t\n", strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}

// WriteIcountMarkdown writes r's tables in markdown, each under a heading of
// the given level ("####").
func WriteIcountMarkdown(w io.Writer, r Icount, level string) {
	for _, t := range r.Tables() {
		fmt.Fprintf(w, "\n%s %s\n\nOne op = %s.\n\n", level, t, r.unit(t))
		fmt.Fprintf(w, "| %s |\n|---|%s\n", strings.Join(IcountHeader, " | "), strings.Repeat("--:|", len(IcountHeader)-1))
		for _, row := range r.IcountRows(t) {
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
	}
}

// unit is the Unit of table's first op.
func (r Icount) unit(table string) string {
	for _, o := range r.Ops {
		if o.Table == table {
			return o.Unit
		}
	}
	return ""
}

// IcountEnv is the environment every counted process runs in.
const IcountEnv = "GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1"

// WriteIcountJSON writes r as indented JSON (a baseline file).
func WriteIcountJSON(w io.Writer, r Icount) error { return writeIndented(w, r) }

// ReadIcountJSON reads a file written by WriteIcountJSON.
func ReadIcountJSON(rd io.Reader) (Icount, error) {
	var r Icount
	if err := decodeStrict(rd, &r); err != nil {
		return r, err
	}
	if len(r.Ops) == 0 {
		return r, fmt.Errorf("results: no ops in the instruction counts")
	}
	return r, nil
}

// Regression is an op of a check whose cost rose beyond the tolerance.
type Regression struct {
	Name string
	// What rose: "instructions" or "allocs".
	What          string
	Baseline, Now float64
}

func (g Regression) String() string {
	if g.What == "allocs" {
		return fmt.Sprintf("%s: %s allocs/op, baseline %s", g.Name, Allocs(g.Now), Allocs(g.Baseline))
	}
	return fmt.Sprintf("%s: %.1f instructions/op, baseline %.1f (%+.1f%%)",
		g.Name, g.Now, g.Baseline, 100*(g.Now/g.Baseline-1))
}

// CheckIcount compares now with the baseline: an op of the baseline whose
// instructions rose more than tolerance (0.05: 5%) above it, or that
// allocates more, is a regression; an op of the baseline that now lacks is
// an error.
func CheckIcount(baseline, now Icount, tolerance float64) ([]Regression, error) {
	var regs []Regression
	for _, b := range baseline.Ops {
		n, ok := now.Find(b.Name)
		if !ok {
			return nil, fmt.Errorf("results: %s is in the baseline but was not measured", b.Name)
		}
		if n.Instructions > b.Instructions*(1+tolerance) {
			regs = append(regs, Regression{Name: b.Name, What: "instructions", Baseline: b.Instructions, Now: n.Instructions})
		}
		// Allocation counts are exact under GOGC=off; a hundredth of an
		// allocation per op is a new allocation every hundred ops.
		if n.Allocs > b.Allocs+0.01 {
			regs = append(regs, Regression{Name: b.Name, What: "allocs", Baseline: b.Allocs, Now: n.Allocs})
		}
	}
	return regs, nil
}
