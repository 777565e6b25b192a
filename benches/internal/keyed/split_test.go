package keyed

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDealKeepsTheRanksWhereTheCaseDoesNotShift(t *testing.T) {
	st := caseSettings(CaseSteady, SplitSettings())
	assert.Zero(t, st.ShiftNs)
	ranks := deal(2, st)
	require.Len(t, ranks, 1)
	assert.Equal(t, identity(splitTenants), ranks[0])
}

func TestDealGivesEveryEpochOfTheShiftingCaseAPermutation(t *testing.T) {
	st := caseSettings(CaseShifting, SplitSettings())
	require.Positive(t, st.ShiftNs)
	ranks := deal(1, st)
	// The run and the deadline of its last operations: 17 s of 3 s epochs.
	assert.Len(t, ranks, int((st.DurationNs+st.DeadlineNs)/st.ShiftNs)+1)
	assert.Equal(t, identity(st.Tenants), ranks[0], "the first epoch is the steady case's")
	hottest := map[int]bool{}
	for e, r := range ranks {
		sorted := slices.Sorted(slices.Values(r))
		assert.Equal(t, identity(st.Tenants), sorted, "epoch %d deals every tenant once", e)
		hottest[r[0]] = true
	}
	assert.Greater(t, len(hottest), 1, "the hottest tenant changes")
	assert.Equal(t, ranks, deal(1, st), "every contender of a round gets the same deal")
	assert.NotEqual(t, ranks, deal(2, st), "another round gets another")
}

func TestSplitLoadPicksTheTenantOfTheEpochItIsIn(t *testing.T) {
	l := &splitLoad{t0: time.Now().Add(-250 * time.Millisecond), shift: 100 * time.Millisecond,
		ranks: [][]int{{0, 1, 2}, {2, 0, 1}, {1, 2, 0}}}
	assert.Equal(t, 1, l.tenant(0), "250 ms in: the third epoch")
	assert.Equal(t, 0, l.tenant(2))
	l.t0 = time.Now().Add(-350 * time.Millisecond)
	assert.Equal(t, 0, l.tenant(0), "past the last epoch the deal starts over")
	l.shift = 0
	assert.Equal(t, 0, l.tenant(0))
}

func TestSplitFiguresSumTheWorkersAndTakeTheQuantilesOfTheSuccesses(t *testing.T) {
	var a, b splitLog
	for i := range 60 {
		a.elapsed = append(a.elapsed, float64(time.Duration(i+1)*time.Millisecond))
	}
	for i := range 40 {
		b.elapsed = append(b.elapsed, float64(time.Duration(61+i)*time.Millisecond))
	}
	a.ops, a.tx, a.failed, a.tooMany = 65, 7, 5, 3
	b.ops, b.tx, b.failed, b.timeouts, b.wrongDB = 42, 4, 2, 1, 1
	r := splitFigures([]splitLog{a, b})
	assert.EqualValues(t, 107, r.Ops)
	assert.EqualValues(t, 11, r.Transactions)
	assert.EqualValues(t, 7, r.Failed)
	assert.EqualValues(t, 3, r.TooMany)
	assert.EqualValues(t, 1, r.Timeouts)
	assert.EqualValues(t, 1, r.WrongDatabase)
	assert.Equal(t, int64(50*time.Millisecond), r.P50Ns, "the 50th of 1 … 100 ms")
	assert.Equal(t, int64(99*time.Millisecond), r.P99Ns)

	none := splitFigures([]splitLog{{ops: 3, failed: 3}})
	assert.Zero(t, none.P99Ns, "no success, no latency")
}

func TestZipfOneInIsAboutOneInN(t *testing.T) {
	z := newZipf(3, 1.2, splitTenants)
	n := 0
	for range 100_000 {
		if z.oneIn(10) {
			n++
		}
	}
	assert.InDelta(t, 10_000, n, 500)
}

func TestSplitContendersShareTheSameConnections(t *testing.T) {
	require.Len(t, splitContenders, 3)
	assert.Equal(t, "static", splitContenders[1].key)
	assert.Equal(t, splitBaseline, splitContenders[1].name)
	assert.Contains(t, splitContenders[0].setup, "MaxSize: 20, MaxSizePerKey: 4")
	assert.Contains(t, splitContenders[2].setup, "MaxSize: 12, MaxSizePerKey: 4")
	assert.Equal(t, splitTenants, SplitSettings().Tenants, "the static split has a connection per tenant, as many as the keyed pool")
	keys := map[string]bool{}
	for _, k := range splitContenders {
		assert.False(t, keys[k.key], "two contenders keyed %s", k.key)
		keys[k.key] = true
		assert.Equal(t, k.key != "static", k.evicts, k.name)
	}
}

// TestEvictReasonsAreThePoolsCloseEvictConstants reads package pool's
// source: every constant whose name starts with CloseEvict must be in
// evictReasons, which the split cases sum as evictions.
func TestEvictReasonsAreThePoolsCloseEvictConstants(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "pool", "*.go"))
	require.NoError(t, err)
	if len(files) == 0 {
		t.Skip("package pool's source is not beside the benches module")
	}
	var names []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if strings.HasPrefix(n.Name, "CloseEvict") {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	require.NotEmpty(t, names, "pool has CloseEvict")
	var listed []string
	for _, r := range evictReasons {
		listed = append(listed, r.name)
	}
	slices.Sort(names)
	slices.Sort(listed)
	assert.Equal(t, names, listed, "add pool's new CloseEvict… reasons to evictReasons (contenders.go)")
}

func TestSplitCasesAreSkippedWhereTheServerDoesNotAnswer(t *testing.T) {
	st := SmokeSplitSettings()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	k, err := Run(ctx, Options{Split: st, Cases: []string{CaseSteady, CaseShifting}, DSN: "postgres://postgres@127.0.0.1:1/none?sslmode=disable&connect_timeout=2"})
	require.NoError(t, err)
	assert.False(t, k.Crowded())
	require.Len(t, k.Splits, 2)
	for i, name := range []string{CaseSteady, CaseShifting} {
		c := k.Splits[i]
		assert.Equal(t, name, c.Name)
		require.Len(t, c.Skipped, 1)
		assert.Contains(t, c.Skipped[0].Reason, "127.0.0.1")
		assert.Empty(t, c.Results)
	}
	assert.Zero(t, k.Splits[0].Settings.ShiftNs, "the steady case never shifts")
	assert.Equal(t, st.ShiftNs, k.Splits[1].Settings.ShiftNs)
}

func TestEstimateCountsOnlyTheCasesRun(t *testing.T) {
	all := PublishOptions()
	crowded, splits := all, all
	crowded.Cases = []string{CaseCrowded}
	splits.Cases = []string{CaseSteady, CaseShifting}
	assert.Equal(t, Estimate(all), Estimate(crowded)+Estimate(splits))
	one := all
	one.Cases = []string{CaseShifting}
	assert.Less(t, Estimate(one), Estimate(splits))
	// Each split case: 3 rounds of 3 contenders of 12 s, and the waits.
	assert.InDelta(t, 2*time.Minute, Estimate(one), float64(30*time.Second))
}
