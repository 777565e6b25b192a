package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/e2e"
	"github.com/poolkit/poolkit/benches/internal/results"
	"github.com/poolkit/poolkit/benches/internal/sockets"
)

func TestParseE2E(t *testing.T) {
	c, err := parse([]string{"-mode=e2e", "-redis=10.0.0.1:6380", "-postgres=postgres://x@h/db"}, new(bytes.Buffer))
	require.NoError(t, err)
	assert.True(t, c.e2e)
	assert.Equal(t, []string{"e2e"}, c.modes)
	assert.Empty(t, c.cases(), "the end-to-end cases are not among the in-process ones")
	assert.Equal(t, e2eDuration, c.e2eDur, "-duration not given: the end-to-end default")
	assert.Equal(t, 100*time.Millisecond, c.duration)
	assert.Equal(t, "10.0.0.1:6380", c.redis)
	assert.Equal(t, "postgres://x@h/db", c.postgres)
	assert.Equal(t, e2e.DefaultMaxSize, c.maxSize())

	c, err = parse([]string{"-mode=hotpath,e2e", "-duration=1s", "-workers=4", "-redis=", "-postgres="}, new(bytes.Buffer))
	require.NoError(t, err)
	assert.True(t, c.e2e)
	assert.Equal(t, []string{"hotpath", "e2e"}, c.modes)
	assert.NotEmpty(t, c.cases())
	assert.Equal(t, time.Second, c.e2eDur, "-duration given: it applies end to end too")
	assert.Equal(t, 4, c.maxSize(), "-workers sets the pools' MaxSize")
	assert.Empty(t, c.redis)
	assert.Empty(t, c.postgres)

	c, err = parse(nil, new(bytes.Buffer))
	require.NoError(t, err)
	assert.False(t, c.e2e)
}

func TestParseE2EServersComeFromTheEnvironment(t *testing.T) {
	t.Setenv(e2e.EnvRedisAddr, "")
	t.Setenv(e2e.EnvPostgresDSN, "")
	c, err := parse([]string{"-mode=e2e"}, new(bytes.Buffer))
	require.NoError(t, err)
	assert.Equal(t, e2e.DefaultRedisAddr, c.redis)
	assert.Equal(t, e2e.DefaultPostgresDSN, c.postgres)

	t.Setenv(e2e.EnvRedisAddr, "redis.example:7000")
	t.Setenv(e2e.EnvPostgresDSN, "host=pg.example")
	c, err = parse([]string{"-mode=e2e"}, new(bytes.Buffer))
	require.NoError(t, err)
	assert.Equal(t, "redis.example:7000", c.redis)
	assert.Equal(t, "host=pg.example", c.postgres)
}

// echoOnly is the shortest end-to-end run: the echo server alone, one round
// of a few ops per contender.
var echoOnly = []string{"-mode=e2e", "-rounds=1", "-ops=64", "-workers=2", "-redis=", "-postgres="}

func TestE2ESmokeAgainstTheEchoServer(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run(echoOnly, &stdout, &stderr), stderr.String())
	out := stdout.String()
	for _, want := range []string{
		"E2E/Server=echo/Phase=steady", "E2E/Server=echo/Phase=oversubscribed", "E2E/Server=echo/Phase=nopool",
		"poolkit", "puddle", "dedicated", "no pool", "dials", "ns/op vs poolkit", "p99, worst goroutine", "ns/op median (min–max)",
		"pools of MaxSize 2", "skipped: redis, not measured: -redis is empty",
		"skipped: postgres, not measured: -postgres is empty",
	} {
		assert.Contains(t, out, want)
	}
	if sockets.Available() {
		assert.Contains(t, out, "TIME_WAIT before → after")
	}
	assert.NotContains(t, out, "Server=redis")
	assert.Contains(t, stderr.String(), "skipping redis")
}

func TestE2EWritesJSONThatReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	require.Equal(t, exitOK, run(append(echoOnly, "-output=json", "-o", path), &stdout, &stderr), stderr.String())
	file, err := os.Open(path)
	require.NoError(t, err)
	defer file.Close()
	f, err := results.ReadJSON(file)
	require.NoError(t, err)
	require.NotNil(t, f.Settings.E2E)
	assert.Equal(t, 2, f.Settings.E2E.MaxSize)
	assert.Equal(t, int64(64), f.Settings.E2E.Ops)
	assert.Len(t, f.Skipped, 2)
	require.Len(t, f.Cases, 3)
	for _, c := range f.Cases {
		assert.True(t, c.Dials, c.Name)
		assert.NotEmpty(t, c.Server)
		for _, k := range c.Contenders {
			require.Len(t, k.Rounds, 1)
			r := k.Rounds[0]
			assert.Zero(t, r.Errors, "%s %s", c.Name, k.Name)
			assert.Positive(t, r.Dials, "%s %s", c.Name, k.Name)
			if k.Name == "no pool" {
				assert.GreaterOrEqual(t, r.Dials, r.Ops, "a dial per request, warm-up included")
			}
			assert.Equal(t, c.TimeWait, r.TimeWait != nil)
		}
	}
	nopool := f.Cases[2]
	assert.Equal(t, "E2E/Server=echo/Phase=nopool", nopool.Name)
	assert.Equal(t, sockets.Available(), nopool.TimeWait)
	if nopool.TimeWait {
		for _, k := range nopool.Contenders {
			if k.Name == "no pool" {
				// Most of the connections it closed first wait in TIME_WAIT;
				// a few from elsewhere may expire meanwhile.
				assert.Greater(t, k.Rounds[0].TimeWait.Left(), int(k.Rounds[0].Ops)/2)
			}
		}
	}
}

func TestE2ESkipsAServerThatDoesNotAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	var stdout, stderr bytes.Buffer
	args := []string{"-mode=e2e", "-rounds=1", "-ops=16", "-workers=1", "-redis=" + closed, "-postgres="}
	require.Equal(t, exitOK, run(args, &stdout, &stderr), stderr.String())
	assert.Contains(t, stderr.String(), "poolbench: e2e: skipping redis, not measured: "+closed)
	assert.Contains(t, stdout.String(), "skipped: redis, not measured: "+closed)
	assert.Contains(t, stdout.String(), "E2E/Server=echo/Phase=steady", "the other servers still run")
	assert.Equal(t, 3, strings.Count(stdout.String(), "\nE2E/"))
}

func TestCommandLineHidesThePostgresPassword(t *testing.T) {
	assert.Equal(t, "poolbench -mode=e2e -postgres=postgres://u:xxxxx@h/db -o r.json",
		commandLine([]string{"-mode=e2e", "-postgres=postgres://u:secret@h/db", "-o", "r.json"}))
	assert.Equal(t, "poolbench --postgres 'host=h password=xxxxx'",
		commandLine([]string{"--postgres", "host=h password=secret"}))
	assert.Equal(t, "poolbench -note postgres", commandLine([]string{"-note", "postgres"}))
}

func TestUsageHidesThePostgresPassword(t *testing.T) {
	t.Setenv(e2e.EnvPostgresDSN, "postgres://u:secret@h/db")
	var stderr bytes.Buffer
	_, err := parse([]string{"-h"}, &stderr)
	require.Error(t, err)
	assert.Contains(t, stderr.String(), "postgres://u:xxxxx@h/db")
	assert.NotContains(t, stderr.String(), "secret")
}

func TestE2EInterruptedBeforeItStarts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitInterrupted, runContext(ctx, echoOnly, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "interrupted")
	assert.Contains(t, stdout.String(), "interrupted")
	assert.NotContains(t, stdout.String(), "skipped", "servers are not blamed for the interruption")
}
