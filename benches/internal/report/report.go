// Package report turns a results file into the published benchmark pages:
// docs/BENCHMARKS.md, a summary (the headline tables, the method, the
// machine and what is not claimed), one page per group of cases under
// docs/benchmarks/ with its tables and an SVG chart per case, a page for
// the faults phase, one for the keyed case and one for the instruction
// counts, and the README's
// headline block. Everything it writes comes from the file, so a report
// can be regenerated at any time without measuring again.
//
// A report is of one measurement: Write refuses a file whose figures come
// from more than one commit, or from a tree with uncommitted changes,
// unless Options.Mixed is set, and then every page says so.
package report

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// Options say where the report goes and what it may be made of.
type Options struct {
	// Docs is the directory of BENCHMARKS.md; the group pages and the
	// charts go to its benchmarks/ subdirectory.
	Docs string
	// In is the results file as the report should name it, relative to the
	// repository root (docs/benchmarks/results.json).
	In string
	// Mixed allows a results file whose figures come from several commits,
	// or from a tree with uncommitted changes; every page then says which
	// figures come from where.
	Mixed bool
}

// ChartDir is the subdirectory of Docs that holds the group pages and the
// charts.
const ChartDir = "benchmarks"

// ErrMixed is returned by Check, and so by Write, for a file whose figures
// do not all come from one clean commit.
var ErrMixed = errors.New("report: the results are not of one clean commit")

// Check returns nil if every figure of f was measured at one commit with no
// uncommitted changes, else an error wrapping ErrMixed that lists the runs.
func Check(f results.File) error {
	if f.OneCommit() {
		return nil
	}
	var runs []string
	for _, s := range f.Sources() {
		runs = append(runs, "  "+sourceLine(s))
	}
	return fmt.Errorf("%w: they come from %d runs:\n%s\nmeasure them again at one commit (poolbench publish), or mark the report as mixed (-mixed)",
		ErrMixed, len(runs), strings.Join(runs, "\n"))
}

// Write writes Docs/BENCHMARKS.md, a page per group with a chart per case,
// the faults, keyed and instruction-count pages where f has them, and removes the
// pages and charts of groups and cases f no longer has. Without opt.Mixed
// it refuses (Check) results that are not of one clean commit.
func Write(f results.File, opt Options) error {
	if !opt.Mixed {
		if err := Check(f); err != nil {
			return err
		}
	}
	dir := filepath.Join(opt.Docs, ChartDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	keep := map[string]bool{}
	files, err := render(f, opt)
	if err != nil {
		return err
	}
	for name, body := range files {
		keep[filepath.Base(name)] = true
		if err := os.WriteFile(filepath.Join(opt.Docs, name), body, 0o644); err != nil {
			return err
		}
	}
	return removeStale(dir, keep)
}

// render makes every file of the report, by name relative to Docs.
func render(f results.File, opt Options) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, c := range f.Cases {
		svg, err := chartSVG(c)
		if err != nil {
			return nil, fmt.Errorf("report: chart of %s: %w", c.Name, err)
		}
		files[filepath.Join(ChartDir, Slug(c.Name)+".svg")] = svg
	}
	for _, p := range Pages(f) {
		var b bytes.Buffer
		if err := p.write(&b, f, opt); err != nil {
			return nil, err
		}
		files[filepath.Join(ChartDir, p.Slug+".md")] = b.Bytes()
	}
	if f.Faults != nil {
		charts, err := faultCharts(*f.Faults)
		if err != nil {
			return nil, err
		}
		for name, svg := range charts {
			files[filepath.Join(ChartDir, name)] = svg
		}
	}
	var b bytes.Buffer
	if err := Summary(&b, f, opt); err != nil {
		return nil, err
	}
	files["BENCHMARKS.md"] = b.Bytes()
	return files, nil
}

// generated says whether a file of the chart directory is one a report
// writes: a chart or a page of a group, the faults, the keyed case or the
// instructions.
func generated(base string) bool {
	for _, p := range []string{"pool-", "bytes-", "e2e", "faults", "keyed", "instructions"} {
		if strings.HasPrefix(base, p) && (strings.HasSuffix(base, ".svg") || strings.HasSuffix(base, ".md")) {
			return true
		}
	}
	return false
}

// removeStale removes from dir the generated files not in keep.
func removeStale(dir string, keep map[string]bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !keep[e.Name()] && generated(e.Name()) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// Slug is the file name stem of a case's chart or a group's page:
// "Pool/Parallel/MaxSize=8/Goroutines=8" → "pool-parallel-maxsize-8-goroutines-8".
func Slug(name string) string {
	return strings.Trim(nonWord.ReplaceAllString(strings.ToLower(name), "-"), "-")
}

// groups returns the groups of f's cases in order of first appearance.
func groups(f results.File) []string {
	var gs []string
	for _, c := range f.Cases {
		if !slices.Contains(gs, c.Group) {
			gs = append(gs, c.Group)
		}
	}
	return gs
}

// hasE2E reports whether f holds end-to-end cases.
func hasE2E(f results.File) bool { return slices.ContainsFunc(f.Cases, isE2E) }

func isE2E(c results.Case) bool { return strings.HasPrefix(c.Group, "E2E/") }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
