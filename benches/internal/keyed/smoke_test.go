package keyed

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/e2e"
	"github.com/poolkit/poolkit/benches/internal/results"
)

// TestKeyedCasesRunAgainstAPrivateServer runs the crowded case for a
// couple of seconds per contender, and the steady case for half a second,
// against a
// PostgreSQL of its own. It needs PostgreSQL's binaries, so it runs where
// the end-to-end tests do: where $POOLKIT_POSTGRES_DSN is set (the cases
// never use that server).
func TestKeyedCasesRunAgainstAPrivateServer(t *testing.T) {
	if os.Getenv(e2e.EnvPostgresDSN) == "" {
		t.Skip(e2e.EnvPostgresDSN + " is not set: the keyed case's smoke test runs with the end-to-end tests")
	}
	opt := SmokeOptions()
	opt.Settings.DurationNs = int64(2 * time.Second)
	opt.Split = shortSplit()
	opt.Cases = []string{CaseCrowded, CaseSteady}
	var progress bytes.Buffer
	opt.Progress = &progress
	k, err := Run(context.Background(), opt)
	require.NoError(t, err)
	t.Log("\n" + progress.String())
	for _, s := range k.Skipped {
		t.Skipf("no private PostgreSQL: %s", s.Reason)
	}
	st := opt.Settings
	require.Len(t, k.Results, len(contenders), progress.String())
	assert.Contains(t, k.Server, "PostgreSQL")
	for i, r := range k.Results {
		require.Len(t, r.Rounds, 1, r.Contender)
		x := r.Rounds[0]
		assert.Equal(t, contenders[i].name, r.Contender, "the first round runs them in order")
		assert.Positive(t, x.Ops, r.Contender)
		assert.Positive(t, x.Polls, "%s: the server's connections were counted", r.Contender)
		assert.Zero(t, x.WrongDatabase, "%s: every query ran in its tenant's database", r.Contender)
		assert.LessOrEqual(t, x.MaxServerConns, st.ClientSlots(), r.Contender)
	}
	pk := k.Results[0].Rounds[0]
	assert.Zero(t, pk.TooMany, "the keyed pool's MaxSize is below the server's limit, which never refuses it: %s", pk.FirstError)
	assert.Positive(t, pk.Evictions, "30 connections for 100 tenants: idle ones are closed for others")
	assert.Contains(t, progress.String(), "poolbench: keyed [round 1/1] poolkit keyed:")

	require.Len(t, k.Splits, 1)
	c := k.Splits[0]
	assert.Equal(t, CaseSteady, c.Name)
	assert.Contains(t, c.Server, "a private cluster")
	requireSplitRan(t, c, progress.String())
	for _, r := range c.Results {
		assert.Zero(t, r.Rounds[0].TooMany, "%s: the private server has room for every contender", r.Contender)
	}
}

// TestSplitCasesRunAgainstTheGivenServer runs the shifting case for half
// a second per contender on $POOLKIT_POSTGRES_DSN's server, which it makes
// its tenant databases on.
func TestSplitCasesRunAgainstTheGivenServer(t *testing.T) {
	dsn := os.Getenv(e2e.EnvPostgresDSN)
	if dsn == "" {
		t.Skip(e2e.EnvPostgresDSN + " is not set")
	}
	var progress bytes.Buffer
	k, err := Run(context.Background(), Options{Split: shortSplit(), Cases: []string{CaseShifting}, DSN: dsn, Progress: &progress})
	require.NoError(t, err)
	t.Log("\n" + progress.String())
	assert.False(t, k.Crowded(), "the crowded case did not run")
	require.Len(t, k.Splits, 1)
	c := k.Splits[0]
	require.Empty(t, c.Skipped)
	assert.Equal(t, CaseShifting, c.Name)
	assert.Contains(t, c.Server, "a server given to poolbench")
	assert.Equal(t, shortSplit().ShiftNs, c.Settings.ShiftNs)
	requireSplitRan(t, c, progress.String())
}

// shortSplit is SmokeSplitSettings cut to half a second per contender,
// with a shift every 150 ms.
func shortSplit() results.KeyedSplitSettings {
	st := SmokeSplitSettings()
	st.DurationNs, st.WarmupNs, st.ShiftNs = int64(500*time.Millisecond), int64(100*time.Millisecond), int64(150*time.Millisecond)
	return st
}

// requireSplitRan checks a split case of one round: every contender ran,
// in order, within its connections, on the right databases, and was
// counted.
func requireSplitRan(t *testing.T, c results.KeyedSplit, progress string) {
	t.Helper()
	require.Len(t, c.Results, len(splitContenders), progress)
	assert.Equal(t, splitBaseline, c.Baseline)
	assert.Positive(t, c.ConnectNs)
	var tx int64
	for i, r := range c.Results {
		k := splitContenders[i]
		require.Len(t, r.Rounds, 1, r.Contender)
		x := r.Rounds[0]
		assert.Equal(t, k.name, r.Contender, "the first round runs them in order")
		assert.Equal(t, k.key, r.Key)
		assert.Positive(t, x.Ops, r.Contender)
		assert.Positive(t, x.Polls, "%s: its connections were counted", r.Contender)
		assert.Zero(t, x.WrongDatabase, "%s: every operation ran in its tenant's database", r.Contender)
		assert.GreaterOrEqual(t, x.Acquires, x.Ops-x.Failed, "%s: every operation that succeeded had a connection", r.Contender)
		assert.Positive(t, x.Connects, r.Contender)
		assert.LessOrEqual(t, x.SteadyConnects, x.Connects, r.Contender)
		assert.Positive(t, x.P99Ns, r.Contender)
		tx += x.Transactions
		bound := splitTenants
		if k.key == "keyed12" {
			bound = 12
		}
		assert.LessOrEqual(t, x.MaxBackends, bound, "%s: never more connections than its bound", r.Contender)
		if k.evicts {
			assert.Contains(t, x.Evictions, "CloseEvict", r.Contender)
		} else {
			assert.Nil(t, x.Evictions, r.Contender)
		}
	}
	assert.Positive(t, tx, "one operation in ten is a transaction")
	assert.Contains(t, progress, "poolbench: keyed "+c.Name+" [round 1/1] poolkit keyed, MaxSize 20:")
}

func TestGivenTargetDropsTheDatabasesItMade(t *testing.T) {
	dsn := os.Getenv(e2e.EnvPostgresDSN)
	if dsn == "" {
		t.Skip(e2e.EnvPostgresDSN + " is not set")
	}
	ctx := context.Background()
	tg, err := givenTarget(ctx, dsn, 2)
	require.NoError(t, err)
	dbs := tg.dbs
	require.Len(t, dbs, 2)
	exists := func() int {
		admin, err := tg.admin(ctx, "poolbench-keyed-test")
		require.NoError(t, err)
		defer admin.Close(ctx)
		var n int
		require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = ANY($1)", dbs).Scan(&n))
		return n
	}
	assert.Equal(t, 2, exists())
	cfg, err := tg.config(0, tg.apps+"test")
	require.NoError(t, err)
	assert.Equal(t, dbs[0], cfg.Database)
	c, err := pgx.ConnectConfig(ctx, cfg) // a session left in one of them
	require.NoError(t, err)
	defer c.Close(ctx)
	require.NoError(t, tg.drop())
	assert.Zero(t, exists(), "both dropped, the session in one ended")
}
