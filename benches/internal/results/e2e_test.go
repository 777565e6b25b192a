package results_test

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// e2eSample is an end-to-end run: the no-pool phase against Redis (dials and
// TIME_WAIT counted), and a skipped PostgreSQL.
func e2eSample() results.File {
	f := sample()
	f.Command = "poolbench -mode=e2e"
	f.Settings = results.Settings{Mode: "e2e", Rounds: 3, DurationNs: 1e8,
		E2E: &results.E2ESettings{DurationNs: 4e8, MaxSize: 8}}
	f.Skipped = []results.Skip{{Server: "postgres", Reason: "127.0.0.1:5432: connection refused"}}
	lat := &results.Latency{Worker: 1, P50: 90e3, P99: 400e3, P999: 4e6, Max: 4.2e6}
	pooled := rounds(20e3, 21e3, 25e3)
	nopool := rounds(95e3, 100e3, 110e3)
	for i := range pooled {
		pooled[i].Latency, nopool[i].Latency = lat, lat
		pooled[i].Dials = 8
		pooled[i].TimeWait = &results.TimeWait{Before: 100 + i, After: 108 + i}
		nopool[i].Dials = int64(1100 + 10*i)
	}
	nopool[0].TimeWait = &results.TimeWait{Before: 108, After: 1208}  // left 1100
	nopool[1].TimeWait = &results.TimeWait{Before: 1209, After: 2319} // left 1110
	nopool[2].TimeWait = &results.TimeWait{Before: 2320, After: 3440} // left 1120
	f.Cases = []results.Case{{
		Name: "E2E/Server=redis/Phase=nopool", Group: "E2E/Server=redis", Params: "Phase=nopool",
		Workers: 8, Unit: "a PING and its PONG", Baseline: "poolkit", Latency: true,
		Server: "Redis 7.0.15 at 127.0.0.1:6379", Setup: "poolkit of MaxSize 8; no pool: a connection dialled for each op, closed after it",
		Dials: true, TimeWait: true,
		Contenders: []results.Contender{
			{Name: "poolkit", Key: "Impl=poolkit", Rounds: pooled},
			{Name: "no pool", Key: "Impl=nopool", Rounds: nopool},
		},
	}}
	return f
}

func TestE2EJSONRoundTrips(t *testing.T) {
	f := e2eSample()
	var b bytes.Buffer
	require.NoError(t, results.WriteJSON(&b, f))
	for _, key := range []string{`"skipped"`, `"e2e"`, `"max_size": 8`, `"server"`, `"dials": 1100`, `"time_wait": {`, `"before": 108`} {
		assert.Contains(t, b.String(), key)
	}
	got, err := results.ReadJSON(&b)
	require.NoError(t, err)
	assert.Equal(t, f, got)
}

func TestE2ESummariesCountDialsAndTimeWait(t *testing.T) {
	sums := e2eSample().Cases[0].Summaries()
	require.Len(t, sums, 2)
	assert.Equal(t, 8.0, sums[0].Dials)
	assert.Equal(t, 1110.0, sums[1].Dials)
	require.NotNil(t, sums[1].TimeWait)
	assert.Equal(t, results.TimeWait{Before: 1209, After: 2319}, *sums[1].TimeWait, "the round that left the median number")
	assert.Equal(t, 1110, sums[1].TimeWait.Left())
	assert.Equal(t, "too few rounds to test", results.Comparison(sums[1]), "3 rounds each cannot reach p < 0.05")

	s := results.Summarize(results.Contender{Name: "x", Rounds: rounds(10)})
	assert.Zero(t, s.Dials)
	assert.Nil(t, s.TimeWait)
	assert.True(t, math.IsNaN(results.Summarize(results.Contender{}).Dials))
}

func TestE2ETableHasDialsAndTimeWaitColumns(t *testing.T) {
	c := e2eSample().Cases[0]
	var b strings.Builder
	require.NoError(t, results.WriteMarkdownTable(&b, c))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 4)
	assert.Equal(t, "| contender | ops/s | p99, worst goroutine | ns/op median (min–max) | allocs/op | p50 | p99.9 | max | dials | TIME_WAIT before → after | ns/op vs poolkit | p99 vs poolkit |", lines[0])
	assert.Equal(t, strings.Repeat("---|", 12), strings.TrimPrefix(lines[1], "|"))
	assert.Equal(t, "| poolkit | 47.6 k | 400 µs | 21.0 µs (20.0–25.0 µs) | 0 | 90.0 µs | 4.00 ms | 4.20 ms | 8 | 101 → 109 | reference | reference |", lines[2])
	assert.Equal(t, "| no pool | 10.0 k | 400 µs | 100 µs (95.0–110 µs) | 0 | 90.0 µs | 4.00 ms | 4.20 ms | 1,110 | 1,209 → 2,319 | too few rounds to test | too few rounds to test |", lines[3])

	c.TimeWait = false
	b.Reset()
	require.NoError(t, results.WriteMarkdownTable(&b, c))
	assert.True(t, strings.HasPrefix(b.String(), "| contender | ops/s | p99, worst goroutine | ns/op median (min–max) | allocs/op | p50 | p99.9 | max | dials | ns/op vs poolkit | p99 vs poolkit |\n"), b.String())

	c.Contenders[1].Rounds = nil
	c.TimeWait = true
	b.Reset()
	require.NoError(t, results.WriteMarkdownTable(&b, c))
	assert.Contains(t, b.String(), "| no pool | — | — | — | — | — | — | — | — | — | — | — |")
}

func TestE2ETextSaysWhatRanAndWhatWasSkipped(t *testing.T) {
	var b strings.Builder
	require.NoError(t, results.WriteText(&b, e2eSample()))
	out := b.String()
	for _, want := range []string{
		"mode e2e, 3 rounds, 400ms per contender per round, pools of MaxSize 8\n",
		"skipped: postgres, not measured: 127.0.0.1:5432: connection refused\n",
		"8 goroutines; poolkit of MaxSize 8; no pool: a connection dialled for each op, closed after it; one op = a PING and its PONG; against Redis 7.0.15 at 127.0.0.1:6379; 3 rounds; latency of the worst goroutine",
		"TIME_WAIT before → after", "1,209 → 2,319",
	} {
		assert.Contains(t, out, want)
	}
	b.Reset()
	require.NoError(t, results.WriteMarkdown(&b, e2eSample()))
	assert.Contains(t, b.String(), "*Skipped: postgres, not measured: 127.0.0.1:5432: connection refused.*")
}

func TestE2ESettingsBesideOtherModes(t *testing.T) {
	f := e2eSample()
	f.Settings.Mode = "all,e2e"
	var b strings.Builder
	require.NoError(t, results.WriteText(&b, f))
	assert.Contains(t, b.String(), "mode all,e2e, 3 rounds, 100ms per contender per round; end to end: 400ms per contender per round, pools of MaxSize 8\n")
}

func TestCount(t *testing.T) {
	for x, want := range map[float64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 1234567: "1,234,567", 1110.5: "1,110", -2500: "-2,500"} {
		assert.Equal(t, want, results.Count(x), x)
	}
	assert.Equal(t, "—", results.Count(math.NaN()))
}
