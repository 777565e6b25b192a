package keyed

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/e2e"
)

// TestKeyedCaseRunsAgainstAPrivateServer runs the case for a couple of
// seconds per contender against a PostgreSQL of its own. It needs
// PostgreSQL's binaries, so it runs where the end-to-end tests do: where
// $POOLKIT_POSTGRES_DSN is set (the case never uses that server).
func TestKeyedCaseRunsAgainstAPrivateServer(t *testing.T) {
	if os.Getenv(e2e.EnvPostgresDSN) == "" {
		t.Skip(e2e.EnvPostgresDSN + " is not set: the keyed case's smoke test runs with the end-to-end tests")
	}
	st := SmokeSettings()
	st.DurationNs = int64(2 * time.Second)
	var progress bytes.Buffer
	k, err := Run(context.Background(), Options{Settings: st, Progress: &progress})
	require.NoError(t, err)
	t.Log("\n" + progress.String())
	for _, s := range k.Skipped {
		t.Skipf("no private PostgreSQL: %s", s.Reason)
	}
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
}
