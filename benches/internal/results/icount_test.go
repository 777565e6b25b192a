package results_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/results"
)

func icountSample() results.Icount {
	return results.Icount{
		Command: "poolbench icount", Valgrind: "valgrind-3.19.0", N1: 10, N2: 110,
		Machine: results.Machine{GoVersion: "go1.26", Commit: "abc", Date: "2026-01-02T03:04:05Z"},
		Ops: []results.IcountOp{
			{Name: "Pool/Impl=poolkit", Table: "Pool", Contender: "poolkit", Unit: "one Acquire + Release", Instructions: 400},
			{Name: "Pool/Impl=syncpool", Table: "Pool", Contender: "syncpool", Unit: "one Acquire + Release", Instructions: 160},
			{Name: "Bytes/Size=4KiB/Impl=poolkit", Table: "Bytes/Size=4KiB", Contender: "poolkit", Unit: "one Get + Put", Instructions: 200},
		},
	}
}

// with returns r with op name's figures replaced.
func with(r results.Icount, name string, instructions, allocs float64) results.Icount {
	r.Ops = append([]results.IcountOp(nil), r.Ops...)
	for i := range r.Ops {
		if r.Ops[i].Name == name {
			r.Ops[i].Instructions, r.Ops[i].Allocs = instructions, allocs
		}
	}
	return r
}

func TestCheckIcountFailsOnlyAboveTheTolerance(t *testing.T) {
	base := icountSample()
	regs, err := results.CheckIcount(base, with(base, "Pool/Impl=poolkit", 419.9, 0), 0.05)
	require.NoError(t, err)
	assert.Empty(t, regs, "4.98% above the baseline is within 5%")

	regs, err = results.CheckIcount(base, with(base, "Pool/Impl=poolkit", 100, 0), 0.05)
	require.NoError(t, err)
	assert.Empty(t, regs, "a fall is never a regression")

	regs, err = results.CheckIcount(base, with(base, "Pool/Impl=poolkit", 420.5, 0), 0.05)
	require.NoError(t, err)
	require.Len(t, regs, 1)
	assert.Equal(t, "Pool/Impl=poolkit", regs[0].Name)
	assert.Contains(t, regs[0].String(), "420.5 instructions/op, baseline 400.0 (+5.1%)")
}

func TestCheckIcountFailsWhenAnOpStartsToAllocate(t *testing.T) {
	base := icountSample()
	regs, err := results.CheckIcount(base, with(base, "Bytes/Size=4KiB/Impl=poolkit", 200, 1), 0.05)
	require.NoError(t, err)
	require.Len(t, regs, 1)
	assert.Equal(t, "allocs", regs[0].What)
}

func TestCheckIcountWantsEveryBaselineOpMeasured(t *testing.T) {
	base := icountSample()
	now := base
	now.Ops = now.Ops[:1]
	_, err := results.CheckIcount(base, now, 0.05)
	assert.ErrorContains(t, err, "Pool/Impl=syncpool is in the baseline but was not measured")
}

func TestIcountJSONRoundTrips(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, results.WriteIcountJSON(&b, icountSample()))
	got, err := results.ReadIcountJSON(&b)
	require.NoError(t, err)
	assert.Equal(t, icountSample(), got)

	_, err = results.ReadIcountJSON(strings.NewReader(`{"ops": []}`))
	assert.ErrorContains(t, err, "no ops")
	_, err = results.ReadIcountJSON(strings.NewReader(`{"ops": [{"name": "x"}], "extra": 1}`))
	assert.ErrorContains(t, err, "unknown field")
}

func TestIcountTablesCompareWithSyncPool(t *testing.T) {
	r := icountSample()
	assert.Equal(t, []string{"Pool", "Bytes/Size=4KiB"}, r.Tables())
	assert.Equal(t, [][]string{
		{"poolkit", "400", "0", "2.50×"},
		{"syncpool", "160", "0", "floor"},
	}, r.IcountRows("Pool"))
	assert.Equal(t, [][]string{{"poolkit", "200", "0", "—"}}, r.IcountRows("Bytes/Size=4KiB"))

	var b bytes.Buffer
	require.NoError(t, results.WriteIcountText(&b, r))
	assert.Contains(t, b.String(), "Pool (one op = one Acquire + Release)")
	assert.Contains(t, b.String(), "ops 10 and 110")
}

func TestMergeKeepsTheIcountUnlessTheRunHasOne(t *testing.T) {
	f := sample()
	ic := icountSample()
	f.Icount = &ic
	merged := results.Merge(f, sample())
	require.NotNil(t, merged.Icount)
	assert.Equal(t, ic, *merged.Icount)

	newer := with(ic, "Pool/Impl=poolkit", 200, 0)
	g := sample()
	g.Icount = &newer
	assert.Equal(t, newer, *results.Merge(f, g).Icount)
}
