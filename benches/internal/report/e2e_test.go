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

// e2eFixture is a tiny end-to-end run (echo and PostgreSQL; Redis skipped).
func e2eFixture(t *testing.T) results.File {
	t.Helper()
	f, err := os.Open("testdata/e2e.json")
	require.NoError(t, err)
	defer f.Close()
	r, err := results.ReadJSON(f)
	require.NoError(t, err)
	require.NotEmpty(t, r.Cases)
	require.NotEmpty(t, r.Skipped)
	return r
}

// mixed is the fixture's in-process cases followed by the end-to-end ones,
// as -mode=all,e2e writes them.
func mixed(t *testing.T) results.File {
	f := fixture(t)
	e := e2eFixture(t)
	f.Cases = append(f.Cases, e.Cases...)
	f.Skipped = e.Skipped
	f.Settings.Mode += ",e2e"
	f.Settings.E2E = e.Settings.E2E
	return f
}

func TestE2EReportHasTablesChartsAndNotes(t *testing.T) {
	f := mixed(t)
	docs := t.TempDir()
	charts := filepath.Join(docs, report.ChartDir)
	require.NoError(t, os.MkdirAll(charts, 0o755))
	stale := filepath.Join(charts, "e2e-server-gone-phase-steady.svg")
	require.NoError(t, os.WriteFile(stale, []byte("<svg/>"), 0o644))

	require.NoError(t, report.Write(f, report.Options{Docs: docs, In: "docs/benchmarks/results.json"}))
	md, err := os.ReadFile(filepath.Join(docs, "BENCHMARKS.md"))
	require.NoError(t, err)
	doc := string(md)
	for _, want := range []string{
		"> **Skipped.** redis, not measured: 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused.",
		"End to end: median requests per second",
		"| workload | poolkit | puddle | pgxpool | database/sql | dedicated | no pool |",
		"### End to end", "**dials**", "**TIME_WAIT before → after**",
		"### E2E/Server=echo", "### E2E/Server=postgres", "#### Phase=oversubscribed",
		"| contender | ops/s | ns/op best (median) | allocs/op | p50 | p99 | p99.9 | max | dials | vs dedicated |",
		"| contender | ops/s | ns/op best (median) | allocs/op | p50 | p99 | p99.9 | max | dials | TIME_WAIT before → after | vs poolkit |",
		"That the end-to-end tables rank the pools", "BenchmarkE2E/",
		"(a part of `net.ipv4.ip_local_port_range`, 32768–60999 here)", "on the loopback only, 2 here), or",
		// The in-process part is still there.
		"### Pool/HotPath", "| contender | ops/s | ns/op best (median) | allocs/op |",
	} {
		assert.Contains(t, doc, want)
	}
	assert.NotContains(t, doc, "Anything end to end", "the caveat of reports without end-to-end cases")
	for _, c := range f.Cases {
		assert.FileExists(t, filepath.Join(charts, report.Slug(c.Name)+".svg"))
	}
	assert.FileExists(t, filepath.Join(charts, "e2e-server-postgres-phase-nopool.svg"))
	assert.NoFileExists(t, stale, "a chart of a case the results no longer have is removed")
}

// TestE2ETablesHaveOneRowPerContenderAndEqualCells checks the shape of every
// end-to-end table in the report.
func TestE2ETablesHaveOneRowPerContenderAndEqualCells(t *testing.T) {
	f := e2eFixture(t)
	var b strings.Builder
	require.NoError(t, report.Markdown(&b, f, "r.json"))
	doc := b.String()
	for _, c := range f.Cases {
		var t0 strings.Builder
		require.NoError(t, results.WriteMarkdownTable(&t0, c))
		table := t0.String()
		assert.Contains(t, doc, table, c.Name)
		lines := strings.Split(strings.TrimSpace(table), "\n")
		require.Len(t, lines, 2+len(c.Contenders), c.Name)
		cells := strings.Count(lines[0], "|")
		for _, l := range lines[1:] {
			assert.Equal(t, cells, strings.Count(l, "|"), "%s: %s", c.Name, l)
		}
		assert.Contains(t, lines[0], "| dials |", c.Name)
		assert.Equal(t, strings.HasSuffix(c.Name, "Phase=nopool"), strings.Contains(lines[0], "| TIME_WAIT before → after |"), c.Name)
	}
	assert.Contains(t, doc, "| pgxpool | ")
	assert.Contains(t, doc, "| database/sql | ")
	assert.Contains(t, doc, "| no pool | ")
}

func TestReportsWithoutE2ESayNothingOfIt(t *testing.T) {
	var b strings.Builder
	require.NoError(t, report.Markdown(&b, fixture(t), "r.json"))
	doc := b.String()
	assert.Contains(t, doc, "Anything end to end")
	for _, absent := range []string{"E2E", "### End to end", "Skipped", "TIME_WAIT", "| dials |"} {
		assert.NotContains(t, doc, absent)
	}
}
