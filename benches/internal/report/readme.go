package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// The README carries the headline tables between these markers; `poolbench
// report` rewrites what lies between them, so the README's figures come from
// the results file like every other published figure.
const (
	ReadmeStart = "<!-- poolbench:headline:start -->"
	ReadmeEnd   = "<!-- poolbench:headline:end -->"
)

// ErrNoMarkers is returned by UpdateReadme when the README lacks the markers.
var ErrNoMarkers = errors.New("report: README has no " + ReadmeStart + " … " + ReadmeEnd + " block")

// ReadmeHeadline writes the block the README shows: the headline tables of f
// and where they come from.
func ReadmeHeadline(w io.Writer, f results.File, opt Options) {
	m := f.Machine
	at := fmt.Sprintf("at commit `%s` by `%s`", shortCommit(m.Commit), PublishCommand)
	if !f.OneCommit() {
		at = fmt.Sprintf("in %d runs at %d commits (mixed)", len(f.Sources()), len(f.Commits()))
	}
	fmt.Fprintf(w, "Measured on %d logical CPUs (%s), GOMAXPROCS %d, %s, %s, %s;\n",
		m.Cores, m.CPU, m.GOMAXPROCS, m.GoVersion, m.Date, at)
	fmt.Fprintf(w, "generated from `%s`.\n", opt.In)
	if !f.OneCommit() {
		fmt.Fprintf(w, "\n> **Mixed results**: these figures come from %d runs at %d commits, not one measurement of one commit; docs/BENCHMARKS.md lists them.\n",
			len(f.Sources()), len(f.Commits()))
	}
	fmt.Fprintln(w)
	readmeHeadline(w, f, "docs/"+ChartDir+"/")
}

// SpliceReadme returns readme with the block between the markers replaced by
// the headline of f.
func SpliceReadme(readme []byte, f results.File, opt Options) ([]byte, error) {
	i := bytes.Index(readme, []byte(ReadmeStart))
	j := bytes.Index(readme, []byte(ReadmeEnd))
	if i < 0 || j < i {
		return nil, ErrNoMarkers
	}
	var b bytes.Buffer
	b.Write(readme[:i+len(ReadmeStart)])
	b.WriteString("\n")
	ReadmeHeadline(&b, f, opt)
	b.WriteString("\n")
	b.Write(readme[j:])
	return b.Bytes(), nil
}

// UpdateReadme rewrites the headline block of the README at path. Without
// opt.Mixed it refuses (Check) results that are not of one clean commit.
func UpdateReadme(path string, f results.File, opt Options) error {
	if !opt.Mixed {
		if err := Check(f); err != nil {
			return err
		}
	}
	readme, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := SpliceReadme(readme, f, opt)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
