package results_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// splitRound is a round of 10 s with ok successful operations, the round
// number, and the contender's counters.
func splitRound(round int, ok, failed int64, acquires, connects int64) results.KeyedSplitRound {
	return results.KeyedSplitRound{
		Round: round, WallNs: 10e9, Ops: ok + failed, Transactions: (ok + failed) / 10, Failed: failed,
		P50Ns: 500e3, P99Ns: 20e6, Acquires: acquires, Connects: connects,
		SteadyAcquires: acquires / 2, SteadyConnects: connects / 4, MaxBackends: 20, Polls: 2000,
	}
}

// splitSample is a split case of three rounds: the keyed pool, the static
// split (the baseline) and a second keyed pool that ran in two rounds
// only.
func splitSample() results.KeyedSplit {
	keyed := []results.KeyedSplitRound{
		splitRound(0, 1_000, 0, 1_000, 400),
		splitRound(1, 3_000, 0, 3_000, 900),
		splitRound(2, 2_000, 0, 2_000, 700),
	}
	for i := range keyed {
		keyed[i].Evictions = map[string]int64{"CloseEvict": int64(100 * (i + 1))}
	}
	static := []results.KeyedSplitRound{
		splitRound(0, 100_000, 0, 100_000, 20),
		splitRound(1, 100_000, 0, 100_000, 20),
		splitRound(2, 50_000, 0, 50_000, 20),
	}
	small := []results.KeyedSplitRound{splitRound(0, 500, 10, 500, 300), splitRound(2, 700, 30, 700, 350)}
	small[1].TooMany, small[1].FirstError = 30, "failed to connect: sorry, too many clients already (SQLSTATE 53300)"
	for i := range small {
		small[i].Evictions = map[string]int64{"CloseEvict": 10, "CloseEvictHot": int64(5 * (i + 1))}
	}
	return results.KeyedSplit{
		Name: "steady", Baseline: "static split",
		Settings: results.KeyedSplitSettings{Tenants: 20, Workers: 48, ZipfS: 1.2, TxEvery: 10,
			DurationNs: 10e9, WarmupNs: 2e9, DeadlineNs: 5e9, PollNs: 5e6, Rounds: 3},
		Server: "PostgreSQL 15.20, a private cluster on 127.0.0.1", ConnectNs: 40e6,
		Results: []results.KeyedSplitResult{
			{Contender: "poolkit keyed, MaxSize 20", Key: "keyed20", Evicts: true, Rounds: keyed},
			{Contender: "static split", Key: "static", Rounds: static},
			{Contender: "poolkit keyed, MaxSize 12", Key: "keyed12", Evicts: true, Rounds: small},
		},
	}
}

func TestKeyedSplitRatioIsTakenWithinEachRound(t *testing.T) {
	c := splitSample()
	// Rounds' ratios 0.01, 0.03 and 0.04: the median is 0.03, where the
	// ratio of the medians (2000 / 100000) would be 0.02.
	r := c.Ratio(c.Results[0])
	assert.InDelta(t, 0.03, r.Median, 1e-12)
	assert.InDelta(t, 0.01, r.Min, 1e-12)
	assert.InDelta(t, 0.04, r.Max, 1e-12)
	assert.InDelta(t, 1, c.Ratio(c.Results[1]).Median, 0, "the baseline against itself")
	small := c.Ratio(c.Results[2])
	assert.InDelta(t, (0.005+0.014)/2, small.Median, 1e-12, "only the rounds the contender ran in")

	c.Baseline = "nobody"
	assert.True(t, math.IsNaN(c.Ratio(c.Results[0]).Median), "no baseline, no ratio")
}

func TestKeyedSplitSummaryCountsPerAcquireAndEvictionsByReason(t *testing.T) {
	c := splitSample()
	s := c.Summarize(c.Results[0])
	assert.Equal(t, 3, s.Rounds)
	assert.InDelta(t, 0.35, s.ConnectsPerAcquire.Median, 1e-12, "400/1000, 900/3000, 700/2000")
	assert.InDelta(t, (700.0/4)/(2000.0/2), s.SteadyPerAcq.Median, 1e-12)
	assert.Equal(t, results.Spread{Median: 200, Min: 100, Max: 300}, s.Evictions)
	assert.Equal(t, map[string]results.Spread{"CloseEvict": {Median: 200, Min: 100, Max: 300}}, s.EvictionsBy)
	assert.InDelta(t, 200, s.QueriesPerSec.Median, 1e-9)

	st := c.Summarize(c.Results[1])
	assert.True(t, math.IsNaN(st.Evictions.Median), "the static split does not evict")
	assert.Nil(t, st.EvictionsBy)

	sm := c.Summarize(c.Results[2])
	assert.Equal(t, results.Spread{Median: 17.5, Min: 15, Max: 20}, sm.Evictions)
	assert.Equal(t, results.Spread{Median: 20, Min: 10, Max: 30}, sm.Failed)
	assert.Contains(t, sm.FirstError, "53300")
}

// splitCells maps the header of KeyedSplitRow's columns to its cells.
func splitCells(t *testing.T, c results.KeyedSplit, i int) map[string]string {
	row := results.KeyedSplitRow(c, c.Results[i])
	require.Len(t, row, len(results.KeyedSplitHeader))
	m := map[string]string{}
	for j, h := range results.KeyedSplitHeader {
		m[h] = row[j]
	}
	return m
}

func TestKeyedSplitRowShowsTheRatioBaselineAndEvictions(t *testing.T) {
	c := splitSample()
	k, st, sm := splitCells(t, c, 0), splitCells(t, c, 1), splitCells(t, c, 2)
	assert.Equal(t, "0.030× (0.010×–0.040×)", k["queries/s ÷ static split"])
	assert.Equal(t, "1 (baseline)", st["queries/s ÷ static split"])
	assert.Equal(t, "n/a", st["evictions"])
	assert.Equal(t, "200 (100–300)", k["evictions"], "one reason: its count alone")
	assert.Equal(t, "18 (15–20) (CloseEvict 10, CloseEvictHot 8 (5–10))", sm["evictions"], "several reasons: each named")
	assert.Equal(t, "0.350 (0.300–0.400)", k["connects per acquire"])
	assert.Equal(t, "500 µs", k["p50"])
	assert.Equal(t, "20.0 ms", k["p99"])
	assert.Equal(t, "20", k["most backends"])
}

func TestSplitRatioAndPerAcquireKeepSmallFiguresReadable(t *testing.T) {
	assert.Equal(t, "0.0083×", results.SplitRatio(0.0083028))
	assert.Equal(t, "0.56×", results.SplitRatio(0.5555))
	assert.Equal(t, "1.23×", results.SplitRatio(1.234))
	assert.Equal(t, "—", results.SplitRatio(math.NaN()))
	assert.Equal(t, "0.362", results.PerAcquire(0.36213))
	assert.Equal(t, "0.000012", results.PerAcquire(0.0000123), "no exponent")
	assert.Equal(t, "0", results.PerAcquire(0))
}

func TestKeyedSplitsRoundTripThroughJSONBesideTheCrowdedCase(t *testing.T) {
	f := sample()
	f.Keyed = keyedSample()
	f.Keyed.Splits = []results.KeyedSplit{splitSample()}
	var b bytes.Buffer
	require.NoError(t, results.WriteJSON(&b, f))
	for _, key := range []string{`"splits": [`, `"steady_connects": 100`, `"CloseEvictHot": 10`, `"baseline": "static split"`} {
		assert.Contains(t, b.String(), key)
	}
	got, err := results.ReadJSON(&b)
	require.NoError(t, err)
	assert.Equal(t, f, got)
	assert.True(t, got.Keyed.Crowded())
	c, ok := got.Keyed.Split("steady")
	require.True(t, ok)
	assert.Equal(t, "keyed20", c.Results[0].Key)
}

func TestAKeyedRunOfTheSplitCasesAloneHasNoCrowdedTable(t *testing.T) {
	f := sample()
	f.Keyed = &results.Keyed{Splits: []results.KeyedSplit{splitSample()}}
	assert.False(t, f.Keyed.Crowded())
	var b bytes.Buffer
	require.NoError(t, results.WriteText(&b, f))
	out := b.String()
	assert.NotContains(t, out, "Keyed/Tenants=0")
	assert.NotContains(t, out, "tenants starved")
	for _, want := range []string{"Keyed/Tenants=20/Case=steady", "queries/s ÷ static split", "1 (baseline)",
		"poolkit keyed, MaxSize 12, first error: failed to connect: sorry, too many clients already (SQLSTATE 53300)",
		"where a connect costs 40.0 ms"} {
		assert.Contains(t, out, want)
	}
}
