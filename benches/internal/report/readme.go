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
func ReadmeHeadline(w io.Writer, f results.File, in string) {
	m := f.Machine
	fmt.Fprintf(w, "Median ns per op, lower is better, measured on %d logical CPUs (%s), GOMAXPROCS %d, %s, %s;\n",
		m.Cores, m.CPU, m.GOMAXPROCS, m.GoVersion, m.Date)
	fmt.Fprintf(w, "generated from `%s` by `go run ./benches/cmd/poolbench report -in %s`.\n", in, in)
	fmt.Fprintf(w, "The spread, allocations, latency, method and what is not claimed are in\n[docs/BENCHMARKS.md](docs/BENCHMARKS.md). %s\n", floorNote)
	headline(w, f.Cases, "Pool/", 4*m.GOMAXPROCS)
	headline(w, f.Cases, "Bytes/", 4*m.GOMAXPROCS)
	if hasE2E(f) {
		e2eHeadline(w, f.Cases)
	}
}

// SpliceReadme returns readme with the block between the markers replaced by
// the headline of f.
func SpliceReadme(readme []byte, f results.File, in string) ([]byte, error) {
	i := bytes.Index(readme, []byte(ReadmeStart))
	j := bytes.Index(readme, []byte(ReadmeEnd))
	if i < 0 || j < i {
		return nil, ErrNoMarkers
	}
	var b bytes.Buffer
	b.Write(readme[:i+len(ReadmeStart)])
	b.WriteString("\n")
	ReadmeHeadline(&b, f, in)
	b.WriteString("\n")
	b.Write(readme[j:])
	return b.Bytes(), nil
}

// UpdateReadme rewrites the headline block of the README at path.
func UpdateReadme(path string, f results.File, in string) error {
	readme, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := SpliceReadme(readme, f, in)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
