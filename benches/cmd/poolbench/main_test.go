package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/benches/internal/keyed"
	"github.com/poolkit/poolkit/benches/internal/results"
)

func TestMain(m *testing.M) {
	// poolbench icount runs its executable as the child under valgrind; in
	// the tests that is this test binary.
	if len(os.Args) > 1 && os.Args[1] == childCommand {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	// os/signal keeps one goroutine for the life of the process once
	// signal.Notify has been called, and go-redis (the faults phase's)
	// one once its package is loaded.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("os/signal.signal_recv"),
		goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.startGlobalTimeCache.func1"))
}

const fixture = "../../internal/report/testdata/results.json"

func TestParseAcceptsGoodFlags(t *testing.T) {
	c, err := parse([]string{"-mode=hotpath, exchange,hotpath", "-workers=4", "-ops=1000", "-duration=20ms",
		"-rounds=3", "-output=markdown", "-o", "x.md", "-note", "hi"}, new(bytes.Buffer))
	require.NoError(t, err)
	assert.Equal(t, []string{"hotpath", "exchange"}, c.modes)
	assert.Equal(t, 4, c.workers)
	assert.Equal(t, int64(1000), c.ops)
	assert.Equal(t, 20*time.Millisecond, c.duration)
	assert.Equal(t, 3, c.rounds)
	assert.Equal(t, "markdown", c.output)
	assert.Equal(t, "x.md", c.out)
	assert.Equal(t, "hi", c.note)
}

func TestSmokeCutsEverySpanUnlessAFlagSetsIt(t *testing.T) {
	c, err := parse([]string{"-mode=hotpath,e2e,faults,keyed", "-smoke"}, new(bytes.Buffer))
	require.NoError(t, err)
	assert.True(t, c.e2e && c.faults && c.keyed)
	assert.Equal(t, smokeDuration, c.duration)
	assert.Equal(t, smokeE2E, c.e2eDur)
	assert.Equal(t, 1, c.rounds)
	assert.Less(t, c.faultSettings.BeforeNs, int64(time.Second))
	assert.Equal(t, keyed.SmokeSettings(), c.keyedOptions.Settings)
	assert.Equal(t, keyed.SmokeSplitSettings(), c.keyedOptions.Split)
	c, err = parse([]string{"-smoke", "-rounds=3", "-duration=7ms"}, new(bytes.Buffer))
	require.NoError(t, err)
	assert.Equal(t, 3, c.rounds)
	assert.Equal(t, 7*time.Millisecond, c.duration)
	assert.Equal(t, 7*time.Millisecond, c.e2eDur)
}

func TestParseKeyedTakesItsDefaultsUnlessDurationOrRoundsAreGiven(t *testing.T) {
	c, err := parse([]string{"-mode=keyed"}, new(bytes.Buffer))
	require.NoError(t, err)
	assert.True(t, c.keyed)
	assert.Empty(t, c.cases(), "the keyed cases are not among the in-process ones")
	assert.Equal(t, keyed.Settings(), c.keyedOptions.Settings)
	assert.Equal(t, keyed.SplitSettings(), c.keyedOptions.Split)
	assert.Equal(t, keyed.CaseNames, c.keyedOptions.Cases, "every case by default")
	assert.Empty(t, c.keyedOptions.DSN, "on the private server by default")
	assert.Less(t, keyed.Estimate(c.keyedOptions), 9*time.Minute, "the published keyed mode stays short")

	c, err = parse([]string{"-mode=keyed", "-duration=3s", "-rounds=1"}, new(bytes.Buffer))
	require.NoError(t, err)
	assert.Equal(t, int64(3*time.Second), c.keyedOptions.Settings.DurationNs)
	assert.Equal(t, int64(3*time.Second), c.keyedOptions.Split.DurationNs)
	assert.Equal(t, int64(750*time.Millisecond), c.keyedOptions.Split.WarmupNs, "a quarter of a short run")
	assert.Equal(t, 1, c.keyedOptions.Settings.Rounds)
	assert.Equal(t, 1, c.keyedOptions.Split.Rounds)
	assert.Equal(t, keyed.Settings().Tenants, c.keyedOptions.Settings.Tenants)
}

func TestParseKeyedCasesServerAndShift(t *testing.T) {
	dsn := "postgres://u:secret@db:5432/x"
	c, err := parse([]string{"-mode=keyed", "-keyed-cases=shifting, steady", "-keyed-postgres=" + dsn, "-keyed-shift=1s"}, new(bytes.Buffer))
	require.NoError(t, err)
	assert.Equal(t, []string{keyed.CaseShifting, keyed.CaseSteady}, c.keyedOptions.Cases)
	assert.Equal(t, dsn, c.keyedOptions.DSN)
	assert.Equal(t, int64(time.Second), c.keyedOptions.Split.ShiftNs)
	assert.NotContains(t, commandLine([]string{"-keyed-postgres=" + dsn}), "secret")
	assert.NotContains(t, commandLine([]string{"-keyed-postgres", dsn}), "secret")

	var stderr bytes.Buffer
	_, err = parse([]string{"-mode=keyed", "-keyed-cases=steady,hot"}, &stderr)
	require.Error(t, err)
	assert.Contains(t, stderr.String(), `-keyed-cases: unknown case "hot"`)
	_, err = parse([]string{"-mode=keyed", "-keyed-shift=0s"}, new(bytes.Buffer))
	assert.Error(t, err)
}

func TestParseDefaults(t *testing.T) {
	c, err := parse(nil, new(bytes.Buffer))
	require.NoError(t, err)
	assert.Equal(t, []string{"default"}, c.modes)
	assert.Equal(t, 10, c.rounds, "enough rounds for the rank test to have power")
	assert.Equal(t, 100*time.Millisecond, c.duration)
	assert.Equal(t, "text", c.output)
	assert.NotEmpty(t, c.cases())
}

func TestEveryModeHasCases(t *testing.T) {
	for _, m := range modeNames {
		if m == modeE2E || m == modeFaults || m == modeKeyed {
			continue // they need servers: see TestE2E*, the keyed package's and the CI smoke run
		}
		assert.NotEmpty(t, modes[m](0), m)
		assert.NotEmpty(t, modes[m](3), m)
	}
	assert.Len(t, modeNames, len(modes)+3)
}

func TestBadFlagsPrintUsageAndExit2(t *testing.T) {
	for _, args := range [][]string{
		{"-mode=nope"},
		{"-mode=hotpath,"},
		{"-mode=e2e,nope"},
		{"-output=xml"},
		{"-rounds=0"},
		{"-ops=-1"},
		{"-workers=-2"},
		{"-duration=0"},
		{"-duration=banana"},
		{"-frobnicate"},
		{"stray"},
		{"report"},
		{"report", "-in"},
		{"report", "-in", "x.json", "extra"},
		{"icount", "stray"},
		{"icount", "-update"},
		{"icount", "-baseline", "b.json", "-merge", "r.json"},
		{"icount", "-n1=5", "-n2=5"},
		{"icount", "-tolerance=-1"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, exitUsage, run(args, &stdout, &stderr))
			assert.Empty(t, stdout.String())
			assert.Contains(t, stderr.String(), "Usage:")
		})
	}
}

func TestHelpExits0(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitOK, run([]string{"-h"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-mode")
	assert.Equal(t, exitOK, run([]string{"report", "-h"}, &stdout, &stderr))
}

// tiny is the smallest real run: Pool/Exchange, one round of a few ops.
var tiny = []string{"-mode=exchange", "-rounds=1", "-ops=64", "-workers=2"}

func TestRunPrintsTextByDefault(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run(tiny, &stdout, &stderr), stderr.String())
	out := stdout.String()
	assert.Contains(t, out, "Pool/Exchange/MaxSize=64/Goroutines=2/Hold=8")
	for _, name := range []string{"poolkit ring", "poolkit mutex", "poolkit none", "chan"} {
		assert.Contains(t, out, name)
	}
}

func TestRunWritesJSONThatReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run(append(tiny, "-output=json", "-o", path), &stdout, &stderr), stderr.String())
	assert.Empty(t, stdout.String())
	file, err := os.Open(path)
	require.NoError(t, err)
	defer file.Close()
	f, err := results.ReadJSON(file)
	require.NoError(t, err)
	assert.Equal(t, "exchange", f.Settings.Mode)
	assert.Equal(t, int64(64), f.Settings.Ops)
	assert.NotEmpty(t, f.Machine.GoVersion)
	assert.NotEmpty(t, f.Machine.Commit)
	assert.True(t, strings.HasPrefix(f.Command, "poolbench -mode=exchange"))
	require.Len(t, f.Cases, 1)
	for _, k := range f.Cases[0].Contenders {
		require.Len(t, k.Rounds, 1)
		assert.Equal(t, int64(64), k.Rounds[0].Ops)
	}
}

func TestRunWritesAMarkdownTable(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run(append(tiny, "-output=markdown"), &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "| contender | ops/s | p99, worst goroutine | ns/op median (min–max) | allocs/op | p50 | p99.9 | max | ns/op vs poolkit ring | p99 vs poolkit ring |")
	assert.Equal(t, 4, strings.Count(stdout.String(), "| poolkit ")+strings.Count(stdout.String(), "| chan |"))
}

func TestInterruptedRunPrintsWhatItHas(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitInterrupted, runContext(ctx, tiny, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "interrupted")
	assert.Contains(t, stdout.String(), "interrupted")
}

func TestReportWritesTheDocs(t *testing.T) {
	docs := t.TempDir()
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run([]string{"report", "-in", fixture, "-docs", docs}, &stdout, &stderr), stderr.String())
	assert.FileExists(t, filepath.Join(docs, "BENCHMARKS.md"))
	svgs, err := filepath.Glob(filepath.Join(docs, "benchmarks", "*.svg"))
	require.NoError(t, err)
	assert.NotEmpty(t, svgs)
}

func TestReportOfAMissingOrBadFileFails(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitFailed, run([]string{"report", "-in", filepath.Join(t.TempDir(), "none.json"), "-docs", t.TempDir()}, &stdout, &stderr))
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{"), 0o644))
	assert.Equal(t, exitFailed, run([]string{"report", "-in", bad, "-docs", t.TempDir()}, &stdout, &stderr))
}

func TestCommandLineQuotesForTheShell(t *testing.T) {
	assert.Equal(t, "poolbench -mode=all -note 'it'\\''s a test' -o docs/benchmarks/results.json",
		commandLine([]string{"-mode=all", "-note", "it's a test", "-o", "docs/benchmarks/results.json"}))
}

func TestTheMachineRecordNamesTheVersionOfEveryComparedModule(t *testing.T) {
	got := results.ThisMachine().Compared
	var paths []string
	for _, m := range got {
		paths = append(paths, m.Path)
		assert.True(t, strings.HasPrefix(m.Version, "v"), "%s has a release version, not %q", m.Path, m.Version)
	}
	assert.Equal(t, results.ComparedModules, paths, "every contender's module is built into poolbench")
}
