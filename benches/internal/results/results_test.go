package results_test

import (
	"bytes"
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// rounds makes rounds of 1000 ops lasting ns[i] ns per op.
func rounds(ns ...float64) []results.Round {
	var rs []results.Round
	for i, n := range ns {
		rs = append(rs, results.Round{Round: i, Ops: 1000, WallNs: int64(n * 1000), Batch: 1, MinWorkerOps: 1000, MaxWorkerOps: 1000})
	}
	return rs
}

func sample() results.File {
	lat := &results.Latency{Worker: 3, P50: 20, P99: 80, P999: 900, Max: 12000}
	withLat := rounds(20, 22, 30)
	for i := range withLat {
		withLat[i].Latency = lat
		withLat[i].Mallocs = 3
	}
	return results.File{
		Schema:  results.Schema,
		Command: "poolbench -mode=hotpath",
		Machine: results.Machine{CPU: "Test CPU", Cores: 2, GOMAXPROCS: 2, GoVersion: "go1.26", OS: "linux", Arch: "amd64",
			Kernel: "Linux 6.0", Date: "2026-01-02T03:04:05Z", Commit: "unknown"},
		Settings: results.Settings{Mode: "hotpath", Rounds: 3, DurationNs: 1e8},
		Cases: []results.Case{{
			Name: "Pool/Parallel/MaxSize=8/Goroutines=8", Group: "Pool/Parallel", Params: "MaxSize=8/Goroutines=8",
			Workers: 8, Unit: "one Acquire + Release", Baseline: "syncpool", Latency: true,
			Contenders: []results.Contender{
				{Name: "poolkit", Key: "Impl=poolkit", Rounds: withLat},
				{Name: "puddle", Key: "Impl=puddle", Rounds: rounds(200, 190, 210)},
				{Name: "syncpool", Key: "Impl=syncpool", Rounds: rounds(18, 19, 25)},
			},
		}},
	}
}

func TestJSONRoundTripsIntoTheSameFile(t *testing.T) {
	f := sample()
	var b bytes.Buffer
	require.NoError(t, results.WriteJSON(&b, f))
	got, err := results.ReadJSON(&b)
	require.NoError(t, err)
	assert.Equal(t, f, got)
}

func TestReadJSONRejectsOtherSchemasAndUnknownFields(t *testing.T) {
	_, err := results.ReadJSON(strings.NewReader(`{"schema": 99}`))
	assert.ErrorContains(t, err, "schema 99")
	_, err = results.ReadJSON(strings.NewReader(`{"schema": 1, "surprise": true}`))
	assert.Error(t, err)
}

func TestSummarizeTakesBestMedianAndSlowest(t *testing.T) {
	s := results.Summarize(sample().Cases[0].Contenders[0])
	assert.Equal(t, 3, s.Rounds)
	assert.InDelta(t, 20, s.Best, 1e-9)
	assert.InDelta(t, 22, s.Median, 1e-9)
	assert.InDelta(t, 30, s.Slowest, 1e-9)
	assert.InDelta(t, 1e9/22, s.OpsPerSec, 1e-3)
	assert.InDelta(t, 0.003, s.AllocsPerOp, 1e-12)
	require.NotNil(t, s.Latency)
	assert.Equal(t, 80.0, s.Latency.P99)
}

func TestMedianOfEvenCountIsTheMeanOfTheMiddleTwo(t *testing.T) {
	assert.Equal(t, 2.5, results.Median([]float64{4, 1, 3, 2}))
	assert.True(t, math.IsNaN(results.Median(nil)))
}

func TestSummariesTestEveryContenderAgainstPoolkit(t *testing.T) {
	sums := sample().Cases[0].Summaries()
	require.Len(t, sums, 3)
	assert.True(t, sums[0].Reference)
	assert.Nil(t, sums[0].Vs, "the reference is not tested against itself")
	assert.Equal(t, "reference", results.Comparison(sums[0]))
	require.NotNil(t, sums[1].Vs)
	require.NotNil(t, sums[2].Vs)
	assert.True(t, sums[2].Floor)
	assert.False(t, sums[1].Floor)
	// 3 rounds against 3: the smallest p the U test can give is 0.1.
	assert.False(t, sums[1].Vs.Differs, "3 rounds each can never differ at p < 0.05")
	assert.NotEmpty(t, sums[1].Vs.Warning)
	assert.False(t, sums[1].Vs.Decided())
	assert.Equal(t, "too few rounds to test", results.Comparison(sums[1]), "not indistinguishable: untested")
	assert.Equal(t, "floor, too few rounds to test", results.Comparison(sums[2]))

	c := sample().Cases[0]
	c.Name, c.Group = "Bytes/HotPath/Size=64KiB", "Bytes/HotPath"
	assert.False(t, c.Summaries()[2].Floor, "a byte pool built on sync.Pool is a competitor")
}

func TestSummariesNameTheRankTestsVerdict(t *testing.T) {
	c := results.Case{Name: "Pool/Parallel/MaxSize=8/Goroutines=8", Baseline: "syncpool", Latency: true, Contenders: []results.Contender{
		{Name: "poolkit", Rounds: rounds(20, 21, 22, 23, 24, 25, 26, 27, 28, 29)},
		{Name: "chan", Rounds: rounds(40, 42, 44, 46, 48, 50, 52, 54, 56, 58)},
		{Name: "mutex", Rounds: rounds(20.5, 21.5, 22.5, 23.5, 24.5, 25.5, 26.5, 27.5, 28.5, 29.5)},
		{Name: "syncpool", Rounds: rounds(10, 10.5, 11, 11.5, 12, 12.5, 13, 13.5, 14, 14.5)},
	}}
	for i := range c.Contenders {
		for j := range c.Contenders[i].Rounds {
			p99 := []float64{100, 1000, 100, 10}[i] * float64(1+j%3)
			c.Contenders[i].Rounds[j].Latency = &results.Latency{P99: p99}
		}
	}
	sums := c.Summaries()
	assert.Equal(t, "2.00× slower [1.76, 2.27]", results.Comparison(sums[1]))
	assert.True(t, sums[1].Vs.Differs)
	assert.Less(t, sums[1].Vs.P, 0.001)
	assert.Equal(t, "indistinguishable (p = 0.739)", results.Comparison(sums[2]), "interleaved rounds")
	assert.Equal(t, "floor, 2.00× faster [1.76, 2.27]", results.Comparison(sums[3]))
	assert.Equal(t, "10.0× higher [5.00, 20.0]", results.P99Comparison(sums[1]))
	assert.Equal(t, "indistinguishable (p = 1.000)", results.P99Comparison(sums[2]))
	assert.Equal(t, "10.0× lower [5.00, 20.0]", results.P99Comparison(sums[3]))
}

func TestCompareGivesTheHodgesLehmannRatioAndTheUTestsInterval(t *testing.T) {
	ref := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	xs := make([]float64, len(ref))
	for i, r := range ref {
		xs[i] = 2 * r
	}
	v := results.Compare(ref, xs)
	require.NotNil(t, v)
	// The ratios of all pairs are 2·j/i, spread evenly about 2 in log.
	assert.InDelta(t, 2, v.Ratio, 1e-9)
	var ratios []float64
	for _, r := range ref {
		for _, x := range xs {
			ratios = append(ratios, x/r)
		}
	}
	sort.Float64s(ratios)
	// 10 rounds against 10: the two-sided 5% critical value of U is 23, so
	// the interval runs from the 24th ratio to the 77th.
	assert.InDelta(t, ratios[23], v.Lo, 1e-9)
	assert.InDelta(t, ratios[76], v.Hi, 1e-9)
	assert.Equal(t, 10, v.N1)
	assert.Equal(t, 10, v.N2)

	assert.Nil(t, results.Compare(nil, xs))
	assert.Nil(t, results.Compare(ref, []float64{math.NaN()}))
	few := results.Compare([]float64{1, 2}, []float64{3, 4})
	assert.True(t, math.IsInf(few.Lo, -1), "2 rounds each: no interval")
	assert.Equal(t, "[no interval: too few rounds]", few.Interval())
}

func TestMarkdownTableHasTheHeaderAndOneRowPerContender(t *testing.T) {
	c := sample().Cases[0]
	var b strings.Builder
	require.NoError(t, results.WriteMarkdownTable(&b, c))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 2+len(c.Contenders))
	assert.Equal(t, "| contender | ops/s | p99, worst goroutine | ns/op median (min–max) | allocs/op | p50 | p99.9 | max | ns/op vs poolkit | p99 vs poolkit |", lines[0])
	assert.Equal(t, "|---|---|---|---|---|---|---|---|---|---|", lines[1])
	for i, k := range c.Contenders {
		assert.True(t, strings.HasPrefix(lines[2+i], "| "+k.Name+" | "), lines[2+i])
		assert.Equal(t, strings.Count(lines[0], "|"), strings.Count(lines[2+i], "|"), "same number of cells")
	}
	assert.Contains(t, lines[2], "| poolkit | 45.5 M | 80.0 ns | 22.0 ns (20.0–30.0 ns) |")
	assert.Contains(t, lines[2], "| 900 ns | 12.0 µs | reference | reference |")

	c.Latency = false
	b.Reset()
	require.NoError(t, results.WriteMarkdownTable(&b, c))
	assert.True(t, strings.HasPrefix(b.String(), "| contender | ops/s | ns/op median (min–max) | allocs/op | ns/op vs poolkit |\n"))
}

func TestWriteMarkdownHasAHeadingPerCase(t *testing.T) {
	var b strings.Builder
	require.NoError(t, results.WriteMarkdown(&b, sample()))
	assert.Contains(t, b.String(), "## Pool/Parallel/MaxSize=8/Goroutines=8\n")
	assert.Contains(t, b.String(), "Test CPU")
}

func TestWriteTextPrintsTheMachineAndATablePerCase(t *testing.T) {
	f := sample()
	f.Interrupted = true
	var b strings.Builder
	require.NoError(t, results.WriteText(&b, f))
	out := b.String()
	for _, want := range []string{"Test CPU", "GOMAXPROCS=2", "Pool/Parallel/MaxSize=8/Goroutines=8",
		"8 goroutines", "latency of the worst goroutine", "ns/op median (min–max)", "22.0 ns (20.0–30.0 ns)", "p99, worst goroutine", "too few rounds to test", "floor, ", "interrupted"} {
		assert.Contains(t, out, want)
	}
}

func TestFormats(t *testing.T) {
	assert.Equal(t, "24.1 ns", results.Nanos(24.1))
	assert.Equal(t, "1.50 µs", results.Nanos(1500))
	assert.Equal(t, "2.71 ms", results.Nanos(2.71e6))
	assert.Equal(t, "—", results.Nanos(math.NaN()))
	assert.Equal(t, "41.3 M", results.Rate(41.3e6))
	assert.Equal(t, "0", results.Allocs(0))
	assert.Equal(t, "1", results.Allocs(1))
	assert.Equal(t, "<0.001", results.Allocs(0.0001))
	assert.Equal(t, "0.25", results.Allocs(0.25))
}

func TestMergeReplacesCasesByNameAndAddsNewOnesToTheirGroup(t *testing.T) {
	f := results.File{Command: "poolbench -mode=all", Cases: []results.Case{
		{Name: "Bytes/Burst/N=10", Group: "Bytes/Burst"},
		{Name: "Bytes/Mixed/Sizes=Zipf", Group: "Bytes/Mixed"},
		{Name: "Pool/HotPath", Group: "Pool/HotPath"},
	}}
	g := results.File{Command: "poolbench -mode=mixed -merge x", Machine: results.Machine{Commit: "abc"}, Cases: []results.Case{
		{Name: "Bytes/Mixed/Sizes=Zipf", Group: "Bytes/Mixed", Memory: true},
		{Name: "Bytes/Mixed/Sizes=NonPowerOfTwo", Group: "Bytes/Mixed"},
		{Name: "Bytes/New/X", Group: "Bytes/New"},
	}}
	m := results.Merge(f, g)
	var names []string
	for _, c := range m.Cases {
		names = append(names, c.Name)
	}
	assert.Equal(t, []string{"Bytes/Burst/N=10", "Bytes/Mixed/Sizes=Zipf", "Bytes/Mixed/Sizes=NonPowerOfTwo", "Pool/HotPath", "Bytes/New/X"}, names)
	assert.True(t, m.Cases[1].Memory, "the merged case replaces the old one")
	assert.Equal(t, "poolbench -mode=all", m.Command, "the first run's command stays")
	require.Len(t, m.Updates, 1)
	assert.Equal(t, results.Update{Command: g.Command, Machine: g.Machine, Cases: []string{"Bytes/Mixed/Sizes=Zipf", "Bytes/Mixed/Sizes=NonPowerOfTwo", "Bytes/New/X"}}, m.Updates[0])
	assert.Len(t, f.Cases, 3, "f is left as it was")
}

func TestWasteAndRetainedAreMediansOverTheRounds(t *testing.T) {
	rs := rounds(10, 11, 12)
	for i := range rs {
		rs[i].Asked, rs[i].Capacity, rs[i].Retained = 1000, int64(1000+100*i), int64(1<<20*(i+1))
	}
	s := results.Summarize(results.Contender{Name: "poolkit", Rounds: rs})
	assert.InDelta(t, 1.1, s.Waste, 1e-9)
	assert.Equal(t, float64(2<<20), s.Retained)
	assert.True(t, math.IsNaN(results.Summarize(results.Contender{Rounds: rounds(10)}).Waste))
	c := results.Case{Name: "Bytes/Burst/N=10", Memory: true, Baseline: "poolkit", Contenders: []results.Contender{{Name: "poolkit", Rounds: rs}}}
	assert.Contains(t, results.Header(c), "cap/len")
	row := results.Row(c, c.Summaries()[0])
	assert.Contains(t, row, "1.10")
	assert.Contains(t, row, "2.00 MiB")
}
