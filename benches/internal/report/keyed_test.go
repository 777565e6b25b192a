package report_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/report"
	"github.com/poolkit/poolkit/benches/internal/results"
)

// keyedFixture is a keyed run (testdata/keyed.json) beside the fixture's
// cases, as publish combines them.
func keyedFixture(t *testing.T) results.File {
	t.Helper()
	f := fixture(t)
	k := readFile(t, "testdata/keyed.json")
	require.NotNil(t, k.Keyed)
	f.Keyed = k.Keyed
	return f
}

func TestTheKeyedCaseHasAPageAndASectionOfTheSummary(t *testing.T) {
	f := keyedFixture(t)
	dir, files := write(t, f, report.Options{})
	page := files["benchmarks/keyed.md"]
	for _, want := range []string{
		"# Keyed pools", "## Method", "## Results",
		"max_connections 40 and superuser_reserved_connections 2",
		"tenant_000 to tenant_099", "so they get 37 of the 40 connections",
		"64 goroutines run queries back to back for 20s",
		"`SELECT current_database(), v FROM item, pg_sleep(0.001) WHERE id = 1`",
		"*poolkit keyed*: pgxmanager.OpenKeyed, one pool.Keyed for every tenant, MaxSize 30 across them, MaxSizePerKey 4",
		"*pgxpool per tenant, MaxConns 1*: a pgxpool per tenant database, MaxConns 1",
		"| contender | queries/s | failed | of them 53300 |",
		"| poolkit keyed | ", "| pgxpool per tenant, MaxConns 4 | ",
		"remaining connection slots are reserved",
		"`Stats().ClosedBy[pool.CloseEvict]`",
		"The server reached its 37 connections for the clients under pgxpool per tenant, MaxConns 4 and pgxpool per tenant, MaxConns 1.",
	} {
		assert.Contains(t, page, want)
	}
	sum := files["BENCHMARKS.md"]
	for _, want := range []string{
		"\n## Keyed pools\n", "[The keyed page](benchmarks/keyed.md)",
		"| workload | poolkit keyed | pgxpool per tenant, MaxConns 4 | pgxpool per tenant, MaxConns 1 |",
		"| 100 tenants, 37 connections (64 goroutines) | **",
		"Fewest failed queries: poolkit keyed (0).",
		"[Keyed pools](benchmarks/keyed.md)",
		"the keyed cases (`-mode=keyed`)",
		"**That the keyed page sizes a deployment.**",
	} {
		assert.Contains(t, sum, want)
	}
	var row string
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, "| pgxpool per tenant, MaxConns 4 |") {
			row = l
		}
	}
	cells := strings.Split(strings.Trim(row, "| "), " | ")
	require.Len(t, cells, len(results.KeyedHeader), row)
	assert.Equal(t, "n/a", cells[slicesIndex(results.KeyedHeader, "evictions")], "a pool per tenant evicts nothing")
	for name, body := range files {
		assert.NotRegexp(t, machinePath, body, name)
	}
	assert.FileExists(t, dir+"/benchmarks/keyed.md")
}

func TestTheKeyedSectionStaysOutOfTheReadmeHeadline(t *testing.T) {
	f := keyedFixture(t)
	var b strings.Builder
	report.ReadmeHeadline(&b, f, report.Options{In: in})
	assert.NotContains(t, b.String(), "pgxpool per tenant")
}

func TestAReportWithoutTheKeyedCaseHasNoKeyedPage(t *testing.T) {
	_, files := write(t, fixture(t), report.Options{})
	assert.NotContains(t, files, "benchmarks/keyed.md")
	assert.NotContains(t, files["BENCHMARKS.md"], "Keyed pools")
	assert.NotContains(t, files["BENCHMARKS.md"], "[The keyed page]")
}

func TestASkippedKeyedCaseSaysWhy(t *testing.T) {
	f := fixture(t)
	f.Keyed = &results.Keyed{Settings: keyedFixture(t).Keyed.Settings,
		Skipped: []results.Skip{{Server: "postgres", Reason: "initdb: not installed"}}}
	_, files := write(t, f, report.Options{})
	assert.Contains(t, files["BENCHMARKS.md"], "> **Skipped in the keyed case.** postgres, not measured: initdb: not installed.")
	assert.Contains(t, files["benchmarks/keyed.md"], "No contender ran.")
}

func slicesIndex(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// splitsFixture is a run of the split cases alone
// (testdata/keyed-splits.json).
func splitsFixture(t *testing.T) *results.Keyed {
	t.Helper()
	k := readFile(t, "testdata/keyed-splits.json").Keyed
	require.NotNil(t, k)
	require.Len(t, k.Splits, 2)
	return k
}

func TestTheSplitCasesHaveATablePerCaseOnTheKeyedPageAndInTheSummary(t *testing.T) {
	f := keyedFixture(t)
	f.Keyed.Splits = splitsFixture(t).Splits
	_, files := write(t, f, report.Options{})
	page, sum := files["benchmarks/keyed.md"], files["BENCHMARKS.md"]
	steady, shifting := f.Keyed.Splits[0], f.Keyed.Splits[1]
	header := "| " + strings.Join(results.KeyedSplitHeader, " | ") + " |"
	for _, want := range []string{
		"## Method", "tenant_000 to tenant_099", // the crowded case stays
		"\n## A static split of the same connections\n", "\n### Method\n",
		"48 goroutines run operations back to back on 20 tenant databases",
		"one in 10, at random, is a transaction (`BEGIN`, `SELECT current_database()`, `SELECT 1`, `COMMIT`)",
		"In the shifting case, every 3s from the start of the load the tenants' ranks in the law are dealt",
		"*poolkit keyed, MaxSize 20*: pgxmanager.OpenKeyed with pool.KeyedConfig{MaxSize: 20, MaxSizePerKey: 4}",
		"*static split, 20 pgxpools of MaxConns 1*: a pgxpool per tenant database, MaxConns 1",
		"`Stats().ClosedBy[pool.CloseEvict]`, summed",
		"counted by\n  their application_name in `pg_stat_activity` every 5ms",
		"`go run ./benches/cmd/poolbench -mode=keyed -keyed-cases=steady,shifting` runs these cases",
		"\n### Steady: the same hottest tenants throughout\n", "\n### Shifting: the tenants' ranks dealt again every 3s\n",
		header, "| static split, 20 pgxpools of MaxConns 1 | 1 (baseline) |",
	} {
		assert.Contains(t, page, want)
	}
	for _, want := range []string{
		"\n### A static split of the same connections\n",
		"[The keyed page](benchmarks/keyed.md#a-static-split-of-the-same-connections) has the method.",
		"**Steady: the same hottest tenants throughout.**", "**Shifting: the tenants' ranks dealt again every 3s.**",
		header, "Fewest failed queries: poolkit keyed (0).",
	} {
		assert.Contains(t, sum, want)
	}
	// Each case's rows are the results package's, the keyed pools' ratio in
	// bold.
	for _, c := range []results.KeyedSplit{steady, shifting} {
		for _, r := range c.Results {
			row := results.KeyedSplitRow(c, r)
			if r.Contender != c.Baseline {
				row[1] = "**" + row[1] + "**"
			}
			line := "| " + strings.Join(row, " | ") + " |"
			assert.Contains(t, page, line)
			assert.Contains(t, sum, line)
		}
	}
	assert.Less(t, strings.Index(page, "### Steady"), strings.Index(page, "### Shifting"), "in the order they ran")
}

func TestAKeyedRunOfTheSplitCasesAloneHasNoCrowdedSection(t *testing.T) {
	f := fixture(t)
	f.Keyed = splitsFixture(t)
	_, files := write(t, f, report.Options{})
	page, sum := files["benchmarks/keyed.md"], files["BENCHMARKS.md"]
	assert.Contains(t, page, "## A static split of the same connections")
	assert.Contains(t, sum, "### A static split of the same connections")
	for _, crowded := range []string{"\n## Method\n", "\n## Results\n", "tenant_000 to tenant_", "No contender ran."} {
		assert.NotContains(t, page, crowded)
	}
	assert.NotContains(t, sum, "Fewest failed queries")
	assert.NotContains(t, sum, "64 goroutines run queries")
}

func TestASkippedSplitCaseSaysWhy(t *testing.T) {
	f := fixture(t)
	k := splitsFixture(t)
	k.Splits[1].Results = nil
	k.Splits[1].Skipped = []results.Skip{{Server: "postgres", Reason: "initdb: not installed"}}
	f.Keyed = k
	_, files := write(t, f, report.Options{})
	assert.Contains(t, files["BENCHMARKS.md"], "> **Skipped in the keyed shifting case.** postgres, not measured: initdb: not installed.")
	page := files["benchmarks/keyed.md"]
	shifting := page[strings.Index(page, "### Shifting"):]
	assert.Contains(t, shifting, "> **Skipped.** postgres, not measured: initdb: not installed.")
	assert.NotContains(t, shifting, "| contender |")
}
