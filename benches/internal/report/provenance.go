package report

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// sourceLine describes one run behind a results file: "`74a151dcb02d`,
// with uncommitted changes, 2026-12-01T11:28:49Z: 20 cases of Pool/Parallel
// and Bytes/HotPath, by `poolbench -mode=all`".
func sourceLine(s results.Source) string {
	var what []string
	if len(s.Cases) > 0 {
		what = append(what, casesOf(s.Cases))
	}
	if s.Faults {
		what = append(what, "the faults phase")
	}
	if s.Keyed {
		what = append(what, "the keyed case")
	}
	if s.Icount {
		what = append(what, "the instruction counts")
	}
	return fmt.Sprintf("%s, %s: %s, by `%s`", commitOf(s.Machine), s.Machine.Date, listOf(what), results.ScrubPaths(s.Command))
}

// commitOf names the commit of m: "`74a151dcb02d`", with ", with
// uncommitted changes" where the tree was dirty.
func commitOf(m results.Machine) string {
	c := "`" + shortCommit(m.Commit) + "`"
	if m.Dirty {
		c += ", with uncommitted changes"
	}
	return c
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// casesOf names the groups of the cases names: "the 7 cases of
// Bytes/Burst and Bytes/Mixed".
func casesOf(names []string) string {
	var groups []string
	for _, name := range names {
		parts := strings.SplitN(name, "/", 3)
		g := strings.Join(parts[:min(2, len(parts))], "/")
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	return fmt.Sprintf("the %d case%s of %s", len(names), plural(len(names)), listOf(groups))
}

// writeMixedNote writes, for a file that is not of one clean commit, the
// warning every page carries; nothing otherwise. The summary's machine
// section lists the runs.
func writeMixedNote(w io.Writer, f results.File, summary string) {
	if f.OneCommit() {
		return
	}
	dirty := 0
	for _, s := range f.Sources() {
		if !s.Clean() {
			dirty++
		}
	}
	fmt.Fprintf(w, "\n> **Mixed results.** These figures are not one measurement of one commit: they come from %d runs at %d commits",
		len(f.Sources()), len(f.Commits()))
	if dirty > 0 {
		fmt.Fprintf(w, ", %d of them with uncommitted changes or at an unknown commit", dirty)
	}
	fmt.Fprintf(w, " ([the runs](%s#the-machine)), so a comparison across runs compares commits and machine states as well as pools. `%s` measures them again at one clean commit.\n",
		summary, PublishCommand)
}

// measuredAt says where a page's cases (or all of f, for names nil) were
// measured: "Measured at commit `abc` on 2026-…" for one source, or the
// sources of each for several.
func measuredAt(f results.File, names []string) string {
	var lines []string
	for _, s := range f.Sources() {
		if names != nil && !slices.ContainsFunc(s.Cases, func(n string) bool { return slices.Contains(names, n) }) {
			continue
		}
		if names == nil && s.Icount {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s, on %s", commitOf(s.Machine), s.Machine.Date))
	}
	if len(lines) == 1 {
		return "Measured at commit " + lines[0] + "."
	}
	return "Measured in several runs, at " + listOf(lines) + " (see [the runs](../BENCHMARKS.md#the-machine))."
}
