package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/report"
	"github.com/poolkit/poolkit/benches/internal/results"
)

func fixture(t *testing.T) results.File {
	t.Helper()
	f, err := os.Open("testdata/results.json")
	require.NoError(t, err)
	defer f.Close()
	r, err := results.ReadJSON(f)
	require.NoError(t, err)
	require.NotEmpty(t, r.Cases)
	return r
}

func TestWriteMakesTheDocAndOneChartPerCase(t *testing.T) {
	f := fixture(t)
	docs := t.TempDir()
	charts := filepath.Join(docs, report.ChartDir)
	require.NoError(t, os.MkdirAll(charts, 0o755))
	stale := filepath.Join(charts, "pool-gone.svg")
	require.NoError(t, os.WriteFile(stale, []byte("<svg/>"), 0o644))
	kept := filepath.Join(charts, "results.json")
	require.NoError(t, os.WriteFile(kept, []byte("{}"), 0o644))

	require.NoError(t, report.Write(f, report.Options{Docs: docs, In: "docs/benchmarks/results.json"}))

	md, err := os.ReadFile(filepath.Join(docs, "BENCHMARKS.md"))
	require.NoError(t, err)
	doc := string(md)
	for _, want := range []string{
		"# Benchmarks",
		"go run ./benches/cmd/poolbench report -in docs/benchmarks/results.json",
		"## The machine", f.Machine.CPU, f.Machine.GoVersion, f.Machine.Kernel, f.Machine.Commit,
		"| GOMAXPROCS | " + "2",
		"## Method", "indistinguishable",
		"## What we do not claim",
		"benchstat@latest old.txt new.txt", "-count=10",
		f.Note,
	} {
		assert.Contains(t, doc, want)
	}
	for _, c := range f.Cases {
		assert.Contains(t, doc, "("+report.ChartDir+"/"+report.Slug(c.Name)+".svg)")
		svg, err := os.ReadFile(filepath.Join(charts, report.Slug(c.Name)+".svg"))
		require.NoError(t, err, c.Name)
		assert.True(t, strings.HasPrefix(string(svg), "<?xml") || strings.HasPrefix(string(svg), "<svg"), c.Name)
		assert.Contains(t, string(svg), "</svg>")
	}
	assert.NoFileExists(t, stale, "a chart of a case the results no longer have is removed")
	assert.FileExists(t, kept, "files that are not charts are left alone")
}

func TestMarkdownHasATablePerCase(t *testing.T) {
	f := fixture(t)
	var b strings.Builder
	require.NoError(t, report.Markdown(&b, f, "docs/benchmarks/results.json"))
	for _, c := range f.Cases {
		assert.Contains(t, b.String(), "| contender | ops/s | ns/op best (median) | allocs/op |")
		for _, k := range c.Contenders {
			assert.Contains(t, b.String(), "| "+k.Name+" | ")
		}
	}
}

func TestInterruptedRunsSaySo(t *testing.T) {
	f := fixture(t)
	f.Interrupted = true
	var b strings.Builder
	require.NoError(t, report.Markdown(&b, f, "r.json"))
	assert.Contains(t, b.String(), "interrupted")
}

func TestSlug(t *testing.T) {
	assert.Equal(t, "pool-parallel-maxsize-8-goroutines-32", report.Slug("Pool/Parallel/MaxSize=8/Goroutines=32"))
	assert.Equal(t, "bytes-hotpath-size-64kib", report.Slug("Bytes/HotPath/Size=64KiB"))
}

// TestCommittedBenchmarksMatchTheirResults checks that docs/BENCHMARKS.md is
// what `poolbench report` makes of the committed results file: regenerate it
// (go run ./benches/cmd/poolbench report -in docs/benchmarks/results.json)
// after changing the results or this package.
func TestCommittedBenchmarksMatchTheirResults(t *testing.T) {
	const docs = "../../../docs"
	in := filepath.Join(docs, report.ChartDir, "results.json")
	file, err := os.Open(in)
	if os.IsNotExist(err) {
		t.Skip("no committed results file")
	}
	require.NoError(t, err)
	defer file.Close()
	f, err := results.ReadJSON(file)
	require.NoError(t, err)
	committed, err := os.ReadFile(filepath.Join(docs, "BENCHMARKS.md"))
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, report.Markdown(&b, f, "docs/benchmarks/results.json"))
	assert.Equal(t, b.String(), string(committed),
		"docs/BENCHMARKS.md is stale: go run ./benches/cmd/poolbench report -in docs/benchmarks/results.json")
	for _, c := range f.Cases {
		assert.FileExists(t, filepath.Join(docs, report.ChartDir, report.Slug(c.Name)+".svg"))
	}
}

// TestCommittedReadmeHeadlineMatchesTheResults checks that the README's
// headline block is what `poolbench report` makes of the committed results.
func TestCommittedReadmeHeadlineMatchesTheResults(t *testing.T) {
	const root = "../../.."
	file, err := os.Open(filepath.Join(root, "docs", report.ChartDir, "results.json"))
	if os.IsNotExist(err) {
		t.Skip("no committed results file")
	}
	require.NoError(t, err)
	defer file.Close()
	f, err := results.ReadJSON(file)
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	want, err := report.SpliceReadme(readme, f, "docs/benchmarks/results.json")
	require.NoError(t, err, "README.md needs the headline markers")
	assert.Equal(t, string(want), string(readme),
		"README.md's headline is stale: go run ./benches/cmd/poolbench report -in docs/benchmarks/results.json")
}

func TestSpliceReadmeNeedsMarkers(t *testing.T) {
	_, err := report.SpliceReadme([]byte("# no markers\n"), results.File{}, "x.json")
	require.ErrorIs(t, err, report.ErrNoMarkers)
}

func TestMarkdownShowsTheInstructionCounts(t *testing.T) {
	f := fixture(t)
	f.Icount = &results.Icount{
		Command: "poolbench icount -merge docs/benchmarks/results.json", Valgrind: "valgrind-3.19.0", N1: 10000, N2: 110000,
		Machine: results.Machine{GoVersion: "go1.26.8", Commit: "abc123", Date: "2026-01-02T03:04:05Z"},
		Ops: []results.IcountOp{
			{Name: "Pool/Impl=poolkit", Table: "Pool", Contender: "poolkit", Unit: "one Acquire + Release", Instructions: 400},
			{Name: "Pool/Impl=syncpool", Table: "Pool", Contender: "syncpool", Unit: "one Acquire + Release", Instructions: 160},
		},
	}
	var b strings.Builder
	require.NoError(t, report.Markdown(&b, f, "docs/benchmarks/results.json"))
	for _, want := range []string{
		"## Instructions per operation",
		"GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1",
		"once for 10,000 ops and once for 110,000",
		"`go run ./benches/cmd/poolbench icount -merge docs/benchmarks/results.json`",
		"### Pool\n\nOne op = one Acquire + Release.",
		"| contender | instructions/op | allocs/op | vs syncpool |",
		"| poolkit | 400 | 0 | 2.50× |",
		"| syncpool | 160 | 0 | floor |",
	} {
		assert.Contains(t, b.String(), want)
	}
}
