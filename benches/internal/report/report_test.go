package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/report"
	"github.com/poolkit/poolkit/benches/internal/results"
)

const in = "docs/benchmarks/results.json"

func readFile(t *testing.T, path string) results.File {
	t.Helper()
	file, err := os.Open(path)
	require.NoError(t, err)
	defer file.Close()
	f, err := results.ReadJSON(file)
	require.NoError(t, err)
	return f
}

// fixture is a small run at one clean commit: Pool/HotPath, Bytes/HotPath,
// Pool/Exchange and Bytes/Mixed.
func fixture(t *testing.T) results.File {
	t.Helper()
	f := readFile(t, "testdata/results.json")
	require.NotEmpty(t, f.Cases)
	require.True(t, f.OneCommit())
	return f
}

// write writes the report of f into a new directory and returns it, with
// every file it wrote, by name relative to it.
func write(t *testing.T, f results.File, opt report.Options) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	opt.Docs = dir
	if opt.In == "" {
		opt.In = in
	}
	require.NoError(t, report.Write(f, opt))
	files := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	}))
	return dir, files
}

var mdLink = regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)

// TestEveryLinkOfTheReportResolves follows every relative link of every
// page: the summary's to the pages, the pages' to their charts and back.
func TestEveryLinkOfTheReportResolves(t *testing.T) {
	dir, files := write(t, fixture(t), report.Options{})
	for name, body := range files {
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(body, -1) {
			target := filepath.Join(dir, filepath.Dir(name), m[1])
			if strings.HasSuffix(m[1], "results.json") {
				continue // the results file lives beside the real docs
			}
			assert.FileExists(t, target, "%s links to %s", name, m[1])
		}
	}
}

func TestWriteMakesASummaryAPagePerGroupAndAChartPerCase(t *testing.T) {
	f := fixture(t)
	f.Machine.Compared = []results.Module{{Path: "github.com/jackc/puddle/v2", Version: "v2.2.3"}, {Path: "github.com/redis/go-redis/v9", Version: "v9.23.0"}}
	docs := t.TempDir()
	charts := filepath.Join(docs, report.ChartDir)
	require.NoError(t, os.MkdirAll(charts, 0o755))
	stale := []string{filepath.Join(charts, "pool-gone.svg"), filepath.Join(charts, "pool-gone.md")}
	for _, p := range stale {
		require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	}
	kept := filepath.Join(charts, "results.json")
	require.NoError(t, os.WriteFile(kept, []byte("{}"), 0o644))

	require.NoError(t, report.Write(f, report.Options{Docs: docs, In: in}))

	summary, err := os.ReadFile(filepath.Join(docs, "BENCHMARKS.md"))
	require.NoError(t, err)
	for _, want := range []string{
		"# Benchmarks", "## Headline", "## The pages", "## Method", "## The machine", "## What we do not claim",
		"go run ./benches/cmd/poolbench publish", "Mann–Whitney U", "Hodges–Lehmann",
		f.Machine.CPU, f.Machine.GoVersion, f.Machine.Kernel, f.Machine.Commit, f.Note,
		"[Pool/Exchange](benchmarks/pool-exchange.md)", "[Bytes/Mixed](benchmarks/bytes-mixed.md)",
		"| Compared with | `github.com/jackc/puddle/v2` v2.2.3, `github.com/redis/go-redis/v9` v9.23.0 |",
	} {
		assert.Contains(t, string(summary), want)
	}
	assert.NotContains(t, string(summary), "Mixed results", "one clean commit")
	for _, c := range f.Cases {
		page, err := os.ReadFile(filepath.Join(charts, report.Slug(c.Group)+".md"))
		require.NoError(t, err, c.Group)
		var table strings.Builder
		require.NoError(t, results.WriteMarkdownTable(&table, c))
		assert.Contains(t, string(page), table.String(), c.Name)
		assert.Contains(t, string(page), "("+report.Slug(c.Name)+".svg)")
		assert.Contains(t, string(page), "Measured at commit `"+f.Machine.Commit[:12]+"`")
		svg, err := os.ReadFile(filepath.Join(charts, report.Slug(c.Name)+".svg"))
		require.NoError(t, err, c.Name)
		assert.Contains(t, string(svg), "</svg>")
		assert.Contains(t, string(svg), "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;", "a font every viewer has")
	}
	for _, p := range stale {
		assert.NoFileExists(t, p, "a page or chart the results no longer have is removed")
	}
	assert.FileExists(t, kept, "files that are not generated are left alone")
}

// mixedFixture is the fixture with one case measured again at another
// commit, with uncommitted changes.
func mixedFixture(t *testing.T) results.File {
	f := fixture(t)
	g := results.File{Command: "poolbench -mode=hotpath -merge x -o /tmp/work/r.json",
		Machine: f.Machine, Cases: f.Cases[:1]}
	g.Machine.Commit, g.Machine.Dirty = "abcdef0123456789", true
	return results.Merge(f, g)
}

func TestReportRefusesResultsOfSeveralCommitsUnlessMarkedMixed(t *testing.T) {
	f := mixedFixture(t)
	err := report.Write(f, report.Options{Docs: t.TempDir(), In: in})
	require.ErrorIs(t, err, report.ErrMixed)
	assert.ErrorContains(t, err, "`abcdef012345`, with uncommitted changes")
	assert.ErrorContains(t, err, "-mixed")
	require.ErrorIs(t, report.UpdateReadme("README.md", f, report.Options{In: in}), report.ErrMixed)

	dirty := fixture(t)
	dirty.Machine.Dirty = true
	require.ErrorIs(t, report.Check(dirty), report.ErrMixed, "one commit, but a dirty tree")
	unknown := fixture(t)
	unknown.Machine.Commit = "unknown"
	require.ErrorIs(t, report.Check(unknown), report.ErrMixed, "no known commit")

	_, files := write(t, f, report.Options{Mixed: true})
	for name, body := range files {
		if strings.HasSuffix(name, ".md") {
			assert.Contains(t, body, "> **Mixed results.**", name)
			assert.Contains(t, body, "report -mixed -in", name)
		}
	}
	assert.Contains(t, files["BENCHMARKS.md"], "`abcdef012345`, with uncommitted changes")
	assert.Contains(t, files["benchmarks/pool-hotpath.md"], "Measured at commit `abcdef012345`, with uncommitted changes")
	readme, err := report.SpliceReadme([]byte(report.ReadmeStart+report.ReadmeEnd), f, report.Options{In: in, Mixed: true})
	require.NoError(t, err)
	assert.Contains(t, string(readme), "**Mixed results**")
}

// machinePath is a directory of a machine that nothing generated may name.
var machinePath = regexp.MustCompile(`/(tmp|home|root|work|var|run|Users)/`)

func TestNothingGeneratedNamesAMachinePath(t *testing.T) {
	f := mixedFixture(t)
	f.Skipped = []results.Skip{{Server: "postgres", Reason: "dial unix /var/run/postgresql/.s.PGSQL.5432: connect: no such file"}}
	f.Note = "kept in /home/someone/notes"
	_, files := write(t, f, report.Options{Mixed: true, In: in})
	require.NotEmpty(t, files)
	for name, body := range files {
		assert.NotRegexp(t, machinePath, body, name)
	}
	var b bytes.Buffer
	report.ReadmeHeadline(&b, f, report.Options{In: in, Mixed: true})
	assert.NotRegexp(t, machinePath, b.String())
	assert.Contains(t, files["BENCHMARKS.md"], "-o r.json", "a path is shortened to its last element")
}

// headlineRows counts the rows of the markdown tables of s.
func headlineRows(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| workload |") {
			n++
		}
	}
	return n
}

// The README's headline is one short table, a row per headline case with
// poolkit against the competitor that did best in it (the worst
// goroutine's p99 beside every multi-goroutine figure), the faults' row,
// the tally over every competitor, and the way to the rest.
func TestTheReadmeHeadlineIsOneShortTable(t *testing.T) {
	f := readFile(t, "../../../docs/benchmarks/results.json")
	var b bytes.Buffer
	report.ReadmeHeadline(&b, f, report.Options{In: in, Mixed: true})
	h := b.String()
	assert.LessOrEqual(t, strings.Count(h, "\n"), 25, "lines")
	assert.Equal(t, 1, strings.Count(h, "| workload |"), "one table")
	assert.LessOrEqual(t, headlineRows(h), 9)
	for _, want := range []string{"Mann–Whitney U", "Against its competitors poolkit is faster in",
		"[docs/BENCHMARKS.md](docs/BENCHMARKS.md)", "| Pool/HotPath, 1 goroutine | **", "faults"} {
		assert.Contains(t, h, want)
	}
	for _, l := range strings.Split(h, "\n") {
		if strings.HasPrefix(l, "| Pool/Parallel/") || strings.HasPrefix(l, "| E2E/") {
			cells := strings.Split(strings.Trim(l, "| "), " | ")
			assert.Contains(t, cells[1], "p99 ", l)
			assert.Contains(t, cells[2], "p99 ", l)
		}
	}
	assert.NotContains(t, h, "(baseline)")
}

// docs/BENCHMARKS.md keeps the full headline: every contender of each
// headline case, a table per group, with what each table shows.
func TestTheBenchmarksHeadlineSaysWhatEachTableShows(t *testing.T) {
	f := readFile(t, "../../../docs/benchmarks/results.json")
	_, files := write(t, f, report.Options{In: in, Mixed: true})
	h := files["BENCHMARKS.md"]
	for _, want := range []string{"**Object pools.** What", "**Byte buffers.** What", "**End to end.** Requests",
		"Against its competitors poolkit is faster in", "Mann–Whitney U"} {
		assert.Contains(t, h, want)
	}
}

func TestTheSummaryStaysUnderThreeHundredLines(t *testing.T) {
	f := readFile(t, "../../../docs/benchmarks/results.json")
	var b bytes.Buffer
	require.NoError(t, report.Summary(&b, f, report.Options{In: in, Mixed: true}))
	assert.Less(t, strings.Count(b.String(), "\n"), 300)
}

func TestInterruptedRunsSaySo(t *testing.T) {
	f := fixture(t)
	f.Interrupted = true
	var b strings.Builder
	require.NoError(t, report.Summary(&b, f, report.Options{In: in}))
	assert.Contains(t, b.String(), "interrupted")
}

func TestSlug(t *testing.T) {
	assert.Equal(t, "pool-parallel-maxsize-8-goroutines-32", report.Slug("Pool/Parallel/MaxSize=8/Goroutines=32"))
	assert.Equal(t, "bytes-hotpath-size-64kib", report.Slug("Bytes/HotPath/Size=64KiB"))
}

// committed reads the committed results and the options they were
// published with: -mixed where they are not of one clean commit.
func committed(t *testing.T) (results.File, report.Options) {
	t.Helper()
	f := readFile(t, "../../../docs/benchmarks/results.json")
	return f, report.Options{In: in, Mixed: !f.OneCommit()}
}

// TestCommittedBenchmarksMatchTheirResults checks that docs/BENCHMARKS.md
// and the pages of docs/benchmarks/ are what `poolbench report` makes of the
// committed results file: regenerate them after changing the results or
// this package.
func TestCommittedBenchmarksMatchTheirResults(t *testing.T) {
	f, opt := committed(t)
	_, files := write(t, f, opt)
	const docs = "../../../docs"
	for name, body := range files {
		got, err := os.ReadFile(filepath.Join(docs, name))
		require.NoError(t, err, "docs/%s is missing: go run ./benches/cmd/poolbench report -in %s", name, in)
		if strings.HasSuffix(name, ".md") {
			assert.Equal(t, body, string(got), "docs/%s is stale: go run ./benches/cmd/poolbench report -in %s", name, in)
		}
	}
}

// TestCommittedReadmeHeadlineMatchesTheResults checks that the README's
// headline block is what `poolbench report` makes of the committed results.
func TestCommittedReadmeHeadlineMatchesTheResults(t *testing.T) {
	f, opt := committed(t)
	readme, err := os.ReadFile("../../../README.md")
	require.NoError(t, err)
	want, err := report.SpliceReadme(readme, f, opt)
	require.NoError(t, err, "README.md needs the headline markers")
	assert.Equal(t, string(want), string(readme), "README.md's headline is stale: go run ./benches/cmd/poolbench report -in %s", in)
}

func TestSpliceReadmeNeedsMarkers(t *testing.T) {
	_, err := report.SpliceReadme([]byte("# no markers\n"), results.File{}, report.Options{})
	require.ErrorIs(t, err, report.ErrNoMarkers)
}

func TestTheInstructionCountsHaveAPage(t *testing.T) {
	f := fixture(t)
	f.Icount = &results.Icount{
		Command: "poolbench icount -merge docs/benchmarks/results.json", Valgrind: "valgrind-3.19.0", N1: 10000, N2: 110000,
		Machine: f.Machine,
		Ops: []results.IcountOp{
			{Name: "Pool/Impl=poolkit", Table: "Pool", Contender: "poolkit", Unit: "one Acquire + Release", Instructions: 400},
			{Name: "Pool/Impl=syncpool", Table: "Pool", Contender: "syncpool", Unit: "one Acquire + Release", Instructions: 160},
		},
	}
	_, files := write(t, f, report.Options{})
	page := files["benchmarks/instructions.md"]
	for _, want := range []string{
		"# Instructions per operation",
		"GOMAXPROCS=1 GOGC=off GODEBUG=asyncpreemptoff=1",
		"once for 10,000 ops and once for 110,000",
		"`go run ./benches/cmd/poolbench icount -merge docs/benchmarks/results.json`",
		"## Pool\n\nOne op = one Acquire + Release.",
		"| contender | instructions/op | allocs/op | vs syncpool |",
		"| poolkit | 400 | 0 | 2.50× |",
		"| syncpool | 160 | 0 | floor |",
	} {
		assert.Contains(t, page, want)
	}
	assert.Contains(t, files["BENCHMARKS.md"], "[Instructions per operation](benchmarks/instructions.md)")
}

func TestTheFaultsPhaseHasAPageAndAHeadlineRow(t *testing.T) {
	f := readFile(t, "testdata/faults.json")
	require.NotNil(t, f.Faults)
	_, files := write(t, f, report.Options{Mixed: true})
	page := files["benchmarks/faults.md"]
	for _, want := range []string{"# Faults", "## Method", "## Every connection killed", "## A server restart",
		"## A network partition", "## The server frozen", "## Added latency", "| failed after the fault ended |",
		"| postgres | pgxmanager checked |", "| redis | go-redis |", "(faults-partition-redis.svg)"} {
		assert.Contains(t, page, want)
	}
	for _, k := range []string{"pgxmanager", "pgxmanager checked", "pgxpool", "database/sql", "poolkit", "go-redis"} {
		assert.Contains(t, files["BENCHMARKS.md"], " "+k+" |", "the headline's faults row has a column per contender")
	}
	assert.Contains(t, files["BENCHMARKS.md"], "| all faults, PostgreSQL and Redis |")
	assert.Contains(t, files["benchmarks/faults-restart-postgres.svg"], "</svg>")
	for name, body := range files {
		assert.NotRegexp(t, machinePath, body, name)
	}
}
