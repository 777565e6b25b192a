package results_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// keyedRound is a round of 10 s with ops queries, failed of them failing
// (tooMany with 53300), worst and median tenant p99s of acquire and query.
func keyedRound(ops, failed, tooMany int64, acquireWorst, queryWorst float64, worstTenant string) results.KeyedRound {
	return results.KeyedRound{
		WallNs: 10e9, Ops: ops, Failed: failed, TooMany: tooMany, Connects: 40, MaxServerConns: 30, Polls: 500,
		TenantsServed: 100, TenantsMeasured: 90,
		Acquire:    results.TenantP99{WorstNs: acquireWorst, WorstTenant: worstTenant, MedianNs: acquireWorst / 10},
		Query:      results.TenantP99{WorstNs: queryWorst, WorstTenant: worstTenant, MedianNs: queryWorst / 10},
		FirstError: "",
	}
}

// keyedSample is a keyed case of two contenders over three rounds: poolkit,
// which evicts and never fails, and a pool per tenant that the server
// refuses connections to.
func keyedSample() *results.Keyed {
	pk := []results.KeyedRound{
		keyedRound(100_000, 0, 0, 3e6, 5e6, "tenant_000"),
		keyedRound(120_000, 0, 0, 1e6, 4e6, "tenant_001"),
		keyedRound(110_000, 0, 0, 2e6, 6e6, "tenant_002"),
	}
	for i := range pk {
		pk[i].Evictions = int64(1000 * (i + 1))
		pk[i].Round, pk[i].Position = i, i%2
	}
	pp := []results.KeyedRound{
		keyedRound(90_000, 5000, 4900, 9e6, 9e6, "tenant_050"),
		keyedRound(80_000, 7000, 6900, 8e6, 8e6, "tenant_060"),
		keyedRound(85_000, 6000, 5900, 7e6, 7e6, "tenant_070"),
	}
	for i := range pp {
		pp[i].TenantsStarved, pp[i].MaxServerConns, pp[i].Timeouts = 60, 37, 100
		pp[i].FirstOther = "timeout: context deadline exceeded"
		pp[i].FirstError = "failed to connect to `user=poolbench_tenant database=tenant_040`: server error: FATAL: sorry, too many clients already (SQLSTATE 53300)"
	}
	return &results.Keyed{
		Settings: results.KeyedSettings{Tenants: 100, Workers: 64, ZipfS: 1.1, MaxConnections: 40, SuperuserReserved: 2,
			MaxSize: 30, MaxSizePerKey: 4, DurationNs: 10e9, SleepNs: 1e6, DeadlineNs: 5e9, PollNs: 20e6, MinSamples: 100, Rounds: 3},
		Server:  "PostgreSQL 15.20, a private cluster on 127.0.0.1",
		SetupNs: 4e9,
		Results: []results.KeyedResult{
			{Contender: "poolkit keyed", Setup: "pool.NewKeyed, MaxSize 30, MaxSizePerKey 4", Evicts: true, Rounds: pk},
			{Contender: "pgxpool per tenant, MaxConns 4", Setup: "a pgxpool per tenant, MaxConns 4", Rounds: pp},
		},
	}
}

func TestKeyedJSONRoundTrips(t *testing.T) {
	f := sample()
	f.Keyed = keyedSample()
	var b bytes.Buffer
	require.NoError(t, results.WriteJSON(&b, f))
	for _, key := range []string{`"keyed": {`, `"too_many_clients": 4900`, `"max_size_per_key": 4`, `"acquire_p99": {`, `"evicts": true`} {
		assert.Contains(t, b.String(), key)
	}
	got, err := results.ReadJSON(&b)
	require.NoError(t, err)
	assert.Equal(t, f, got)
}

func TestKeyedSummaryIsTheMedianAndRangeOfTheRounds(t *testing.T) {
	k := keyedSample()
	s := k.Results[0].Summarize()
	assert.Equal(t, 3, s.Rounds)
	assert.InDelta(t, 11_000, s.QueriesPerSec.Median, 1e-9)
	assert.InDelta(t, 10_000, s.QueriesPerSec.Min, 1e-9)
	assert.InDelta(t, 12_000, s.QueriesPerSec.Max, 1e-9)
	assert.Equal(t, results.Spread{Median: 2000, Min: 1000, Max: 3000}, s.Evictions)
	assert.Equal(t, results.Spread{Median: 2e6, Min: 1e6, Max: 3e6}, s.AcquireWorst)
	assert.Equal(t, "tenant_002", s.WorstAcquireTenant, "the worst tenant of the round with the median worst p99")
	assert.Equal(t, "tenant_000", s.WorstQueryTenant)

	p := k.Results[1].Summarize()
	assert.True(t, math.IsNaN(p.Evictions.Median), "a pool per tenant does not evict")
	assert.Equal(t, results.Spread{Median: 5900, Min: 4900, Max: 6900}, p.TooMany)
	assert.InDelta(t, (85_000-6000)/10.0, p.QueriesPerSec.Median, 1e-9, "successful queries only")
	assert.Contains(t, p.FirstError, "53300")
	assert.Equal(t, results.Spread{Median: 100, Min: 100, Max: 100}, p.Timeouts)
}

func TestKeyedSummaryLeavesOutRoundsWithoutAMeasuredTenant(t *testing.T) {
	r := results.KeyedResult{Contender: "x", Rounds: []results.KeyedRound{
		keyedRound(10, 10, 10, math.NaN(), math.NaN(), ""),
		keyedRound(10, 0, 0, 4e6, 5e6, "tenant_009"),
	}}
	s := r.Summarize()
	assert.Equal(t, results.Spread{Median: 4e6, Min: 4e6, Max: 4e6}, s.AcquireWorst)
	assert.Equal(t, "tenant_009", s.WorstAcquireTenant)
}

// cells maps the header of KeyedRow's columns to its cells.
func cells(t *testing.T, r results.KeyedResult) map[string]string {
	row := results.KeyedRow(r)
	require.Len(t, row, len(results.KeyedHeader))
	m := map[string]string{}
	for i, h := range results.KeyedHeader {
		m[h] = row[i]
	}
	return m
}

func TestKeyedRowSaysNAForEvictionsOfAContenderThatDoesNotEvict(t *testing.T) {
	k := keyedSample()
	pk, pp := cells(t, k.Results[0]), cells(t, k.Results[1])
	assert.Equal(t, "poolkit keyed", pk["contender"])
	assert.Equal(t, "11.0 k (10.0 k–12.0 k)", pk["queries/s"])
	assert.Equal(t, "0", pk["failed"])
	assert.Equal(t, "2.00 ms (1.00 ms–3.00 ms) (tenant_002)", pk["acquire p99, worst tenant"])
	assert.Equal(t, "2,000 (1,000–3,000)", pk["evictions"])
	assert.Equal(t, "30", pk["most server connections"])
	assert.Equal(t, "n/a", pp["evictions"])
	assert.Equal(t, "5,900 (4,900–6,900)", pp["of them 53300"])
	assert.Equal(t, "100", pp["of them timed out"])
	assert.Equal(t, "60", pp["tenants starved"])
	assert.Equal(t, "37", pp["most server connections"])
}

func TestKeyedTextHasTheSettingsTheTableAndTheFirstErrors(t *testing.T) {
	f := sample()
	f.Keyed = keyedSample()
	var b bytes.Buffer
	require.NoError(t, results.WriteText(&b, f))
	out := b.String()
	for _, want := range []string{"Keyed/Tenants=100", "100 tenant databases, Zipf s=1.1; 64 goroutines",
		"server max_connections 40, 37 for the clients", "against PostgreSQL 15.20", "most server connections",
		"pgxpool per tenant, MaxConns 4, first error: failed to connect", "n/a",
		"pgxpool per tenant, MaxConns 4, first other error: timeout: context deadline exceeded"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "poolkit keyed, first error", "no error, no line")
}

func TestMergeTakesTheKeyedCaseOfTheLaterRunAndSaysWhereItCameFrom(t *testing.T) {
	f := sample()
	f.Machine.Commit = "aaa"
	g := results.File{Command: "poolbench -mode=keyed", Machine: f.Machine, Keyed: keyedSample()}
	g.Machine.Commit = "bbb"
	m := results.Merge(f, g)
	require.NotNil(t, m.Keyed)
	require.Len(t, m.Updates, 1)
	assert.True(t, m.Updates[0].Keyed)
	srcs := m.Sources()
	require.Len(t, srcs, 2, "the first run for its cases, the update for the keyed case")
	assert.False(t, srcs[0].Keyed)
	assert.True(t, srcs[1].Keyed)
	assert.Empty(t, srcs[1].Cases)

	again := results.Merge(m, results.File{Command: "poolbench -mode=hotpath", Machine: f.Machine, Cases: f.Cases})
	assert.Same(t, m.Keyed, again.Keyed, "a run without the keyed case keeps the file's")
	assert.False(t, again.Updates[1].Keyed)
}

func TestKeyedSettingsLeaveTheReservedSlotsOut(t *testing.T) {
	assert.Equal(t, 37, keyedSample().Settings.ClientSlots())
}

func TestKeyedRoundWithoutAMeasuredTenantRoundTripsThroughJSON(t *testing.T) {
	f := sample()
	f.Keyed = keyedSample()
	f.Keyed.Results[0].Rounds[0] = keyedRound(10, 10, 10, math.NaN(), math.NaN(), "")
	var b bytes.Buffer
	require.NoError(t, results.WriteJSON(&b, f), "NaN is written as null")
	assert.Contains(t, b.String(), `"worst_ns": null`)
	got, err := results.ReadJSON(&b)
	require.NoError(t, err)
	r := got.Keyed.Results[0].Rounds[0]
	assert.True(t, math.IsNaN(r.Acquire.WorstNs) && math.IsNaN(r.Query.MedianNs), "null is read as NaN")
	assert.Equal(t, f.Keyed.Results[0].Rounds[1], got.Keyed.Results[0].Rounds[1])
}
