package report_test

import (
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
	r := readFile(t, "testdata/e2e.json")
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

func TestE2EReportHasItsPageTablesChartsAndNotes(t *testing.T) {
	f := mixed(t)
	_, files := write(t, f, report.Options{})
	summary, page := files["BENCHMARKS.md"], files["benchmarks/e2e.md"]
	for _, want := range []string{
		"> **Skipped.** redis, not measured: 127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused.",
		"**End to end.** Requests per second",
		"| workload | poolkit | puddle | pgxpool | database/sql | dedicated |",
		"That the end-to-end tables rank the pools", "[End to end](benchmarks/e2e.md)",
	} {
		assert.Contains(t, summary, want)
	}
	for _, want := range []string{
		"# End to end", "## Method", "**dials**", "**TIME_WAIT before → after**", "PgBouncer",
		"## E2E/Server=echo", "## E2E/Server=postgres", "### Phase=oversubscribed",
		"(a part of `net.ipv4.ip_local_port_range`, 32768–60999 here)", "on the loopback only, 2 here), or",
	} {
		assert.Contains(t, page, want)
	}
	for _, c := range f.Cases {
		if strings.HasPrefix(c.Name, "E2E/") {
			assert.Contains(t, files["benchmarks/"+report.Slug(c.Name)+".svg"], "requests/s", "the charts in the tables' unit")
		}
	}
}

// TestE2ETablesHaveOneRowPerContenderAndEqualCells checks the shape of every
// end-to-end table in the report.
func TestE2ETablesHaveOneRowPerContenderAndEqualCells(t *testing.T) {
	f := e2eFixture(t)
	_, files := write(t, f, report.Options{Mixed: true})
	page := files["benchmarks/e2e.md"]
	for _, c := range f.Cases {
		var t0 strings.Builder
		require.NoError(t, results.WriteMarkdownTable(&t0, c))
		table := t0.String()
		assert.Contains(t, page, table, c.Name)
		lines := strings.Split(strings.TrimSpace(table), "\n")
		require.Len(t, lines, 2+len(c.Contenders), c.Name)
		cells := strings.Count(lines[0], "|")
		for _, l := range lines[1:] {
			assert.Equal(t, cells, strings.Count(l, "|"), "%s: %s", c.Name, l)
		}
		assert.Contains(t, lines[0], "| dials |", c.Name)
		assert.Contains(t, lines[0], "| p99, worst goroutine |", c.Name)
		assert.Equal(t, strings.HasSuffix(c.Name, "Phase=nopool"), strings.Contains(lines[0], "| TIME_WAIT before → after |"), c.Name)
	}
	assert.Contains(t, page, "| pgxpool | ")
	assert.Contains(t, page, "| database/sql | ")
	assert.Contains(t, page, "| no pool | ")
}

func TestReportsWithoutE2ESayNothingOfIt(t *testing.T) {
	_, files := write(t, fixture(t), report.Options{})
	assert.NotContains(t, files, "benchmarks/e2e.md")
	for _, absent := range []string{"E2E", "Skipped", "TIME_WAIT", "| dials |", "end-to-end tables"} {
		assert.NotContains(t, files["BENCHMARKS.md"], absent)
	}
}
