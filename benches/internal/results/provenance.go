package results

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// Source is one run behind part of a results file: the first run, a run
// merged into it (File.Updates), or the instruction counts, with the cases
// whose figures it still provides.
type Source struct {
	Command string
	Machine Machine
	// Cases names the cases of the file measured by this run (a later
	// update may have replaced some of those it measured).
	Cases []string
	// Faults says that the faults phase of the file comes from this run.
	Faults bool
	// Keyed says that the keyed case of the file comes from this run.
	Keyed bool
	// Icount says that this is the run of the instruction counts.
	Icount bool
}

// Clean reports whether the source was measured at a known commit with no
// uncommitted changes to tracked files.
func (s Source) Clean() bool {
	return !s.Machine.Dirty && s.Machine.Commit != "" && s.Machine.Commit != "unknown"
}

// Sources returns the runs whose figures f holds, in the order they ran:
// the first run, then each update that still provides a case (or the
// faults phase, or the keyed case), then the instruction counts. A file written by one run
// has one source (two with instruction counts merged into it).
func (f File) Sources() []Source {
	runs := []Source{{Command: f.Command, Machine: f.Machine}}
	for _, u := range f.Updates {
		runs = append(runs, Source{Command: u.Command, Machine: u.Machine})
	}
	from := map[string]int{}
	for i, u := range f.Updates {
		for _, name := range u.Cases {
			from[name] = i + 1
		}
	}
	faultsFrom, keyedFrom := 0, 0
	for i, u := range f.Updates {
		if u.Faults {
			faultsFrom = i + 1
		}
		if u.Keyed {
			keyedFrom = i + 1
		}
	}
	for _, c := range f.Cases {
		runs[from[c.Name]].Cases = append(runs[from[c.Name]].Cases, c.Name)
	}
	if f.Faults != nil {
		runs[faultsFrom].Faults = true
	}
	if f.Keyed != nil {
		runs[keyedFrom].Keyed = true
	}
	var out []Source
	for i, s := range runs {
		if i == 0 || len(s.Cases) > 0 || s.Faults || s.Keyed {
			out = append(out, s)
		}
	}
	if f.Icount != nil {
		out = append(out, Source{Command: f.Icount.Command, Machine: f.Icount.Machine, Icount: true})
	}
	return out
}

// Commits returns the distinct commits of f's sources, in order of first
// appearance; a commit of a source with uncommitted changes is followed by
// " (with uncommitted changes)".
func (f File) Commits() []string {
	var out []string
	for _, s := range f.Sources() {
		c := s.Machine.Commit
		if s.Machine.Dirty {
			c += " (with uncommitted changes)"
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// OneCommit reports whether every figure of f was measured at one known
// commit with no uncommitted changes: what a published report requires.
func (f File) OneCommit() bool {
	srcs := f.Sources()
	for _, s := range srcs {
		if !s.Clean() || s.Machine.Commit != srcs[0].Machine.Commit {
			return false
		}
	}
	return true
}

// absPath is an absolute path in a command line or a message: after the
// start, a space, a quote, "=" or "(".
var absPath = regexp.MustCompile(`(^|[\s'"=(])(/[^\s'"):,]+)`)

// ScrubPaths replaces every absolute path in s with its last element, so
// that nothing generated names a directory of the machine it ran on:
// "-o /tmp/r.json" → "-o r.json", "dial unix /run/postgresql/.s.PGSQL.5432"
// → "dial unix .s.PGSQL.5432".
func ScrubPaths(s string) string {
	return absPath.ReplaceAllStringFunc(s, func(m string) string {
		lead := ""
		if m[0] != '/' {
			lead, m = m[:1], m[1:]
		}
		return lead + path.Base(strings.TrimRight(m, "/"))
	})
}
