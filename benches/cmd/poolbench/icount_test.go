package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/icount"
	"github.com/poolkit/poolkit/benches/internal/results"
	"github.com/poolkit/poolkit/internal/testutil/ptest"
)

func TestIcountChildPrintsItsAllocations(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{childCommand, "-op", "Pool/Impl=syncpool", "-n", "100"}, &stdout, &stderr), stderr.String())
	_, err := strconv.ParseUint(strings.TrimSpace(stdout.String()), 10, 64)
	assert.NoError(t, err, stdout.String())

	assert.Equal(t, exitUsage, run([]string{childCommand}, &stdout, &stderr))
	assert.Equal(t, exitFailed, run([]string{childCommand, "-op", "nope", "-n", "1"}, &stdout, &stderr))
}

// baselineFile writes a baseline of the guarded ops, each at instructions.
func baselineFile(t *testing.T, instructions float64) string {
	t.Helper()
	r := results.Icount{Command: "poolbench icount -baseline b.json -update", N1: 1, N2: 2, Valgrind: "valgrind-x"}
	for _, o := range icount.Guarded() {
		op := o.IcountOp
		op.Instructions = instructions
		r.Ops = append(r.Ops, op)
	}
	path := filepath.Join(t.TempDir(), "icount-baseline.json")
	require.NoError(t, writeFile(path, func(w io.Writer) error { return results.WriteIcountJSON(w, r) }))
	return path
}

func measuredAt(instructions float64) results.Icount {
	var r results.Icount
	for _, o := range icount.Guarded() {
		op := o.IcountOp
		op.Instructions = instructions
		r.Ops = append(r.Ops, op)
	}
	return r
}

func TestCheckBaselinePrintsBothAndFailsAboveTheTolerance(t *testing.T) {
	path := baselineFile(t, 300)
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitOK, checkBaseline(path, measuredAt(314), 0.05, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "now    314.0  baseline    300.0  (+4.7%)")
	assert.Contains(t, stdout.String(), "ok: no hot path")

	stdout.Reset()
	assert.Equal(t, exitFailed, checkBaseline(path, measuredAt(316), 0.05, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "Pool/Impl=poolkit: 316.0 instructions/op, baseline 300.0 (+5.3%)")
	assert.Contains(t, stderr.String(), "icount -baseline "+path+" -update")

	assert.Equal(t, exitFailed, checkBaseline(filepath.Join(t.TempDir(), "none.json"), measuredAt(1), 0.05, &stdout, &stderr))
}

// TestIcountUnderCallgrind counts one op for real: it needs valgrind.
func TestIcountUnderCallgrind(t *testing.T) {
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("valgrind is not installed: apt-get install valgrind to run this test")
	}
	if ptest.Race {
		t.Skip("the race detector's instrumentation is in every count, and sync.Pool drops objects at random under it")
	}
	op, err := icount.Find("Pool/Impl=syncpool")
	require.NoError(t, err)
	r, err := icount.Measure(context.Background(), []icount.Op{op}, icount.Options{
		Self: []string{os.Args[0], childCommand}, N1: 1000, N2: 11000,
	})
	require.NoError(t, err)
	require.Len(t, r.Ops, 1)
	// sync.Pool's Get + Put is a hundred or two instructions on amd64 and
	// arm64: a count outside [50, 1000] means the difference went wrong.
	assert.InDelta(t, 525, r.Ops[0].Instructions, 475)
	assert.Less(t, r.Ops[0].Allocs, 0.01, "sync.Pool allocates nothing in its steady state")
	assert.Equal(t, 1000, r.N1)
	assert.NotEmpty(t, r.Valgrind)
}
