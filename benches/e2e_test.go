package benches

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/e2e"
	"github.com/poolkit/poolkit/benches/internal/workload"
)

// openE2E starts the end-to-end servers of the environment (the echo server
// always; Redis and PostgreSQL where the integration variables name them, and
// they must answer then).
func openE2E(t *testing.T) *e2e.Env {
	t.Helper()
	env, err := e2e.Open(context.Background(), e2e.FromEnv())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, env.Close()) })
	require.Empty(t, env.Skipped, "a server named by %s or %s does not answer", e2e.EnvRedisAddr, e2e.EnvPostgresDSN)
	return env
}

func TestE2ENamesFollowTheIssue(t *testing.T) {
	env := openE2E(t)
	got := names(env.Cases(context.Background(), e2e.DefaultMaxSize))
	for _, n := range []string{
		"E2E/Server=echo/Phase=steady/Impl=poolkit",
		"E2E/Server=echo/Phase=steady/Impl=puddle",
		"E2E/Server=echo/Phase=steady/Impl=dedicated",
		"E2E/Server=echo/Phase=oversubscribed/Impl=poolkit",
		"E2E/Server=echo/Phase=nopool/Impl=nopool",
		"E2E/Server=echo/Phase=nopool/Impl=poolkit",
	} {
		assert.True(t, got[n], n)
	}
	if os.Getenv(e2e.EnvPostgresDSN) != "" {
		for _, n := range []string{
			"E2E/Server=postgres/Phase=steady/Impl=pgxpool",
			"E2E/Server=postgres/Phase=steady/Impl=pgxmanager",
			"E2E/Server=postgres/Phase=oversubscribed/Impl=sql",
			"E2E/Server=postgres/Phase=nopool/Impl=nopool",
		} {
			assert.True(t, got[n], n)
		}
	}
	if os.Getenv(e2e.EnvRedisAddr) != "" {
		assert.True(t, got["E2E/Server=redis/Phase=oversubscribed/Impl=puddle"])
	}
}

func TestE2ECasesHaveTheirPhases(t *testing.T) {
	env := openE2E(t)
	cases := env.Cases(context.Background(), 3)
	require.Len(t, cases, 3*len(env.Servers()))
	for _, c := range cases {
		seen := map[string]bool{}
		for _, e := range c.Entries {
			assert.False(t, seen[e.Name], "%s: two entries named %q", c.Name(), e.Name)
			seen[e.Name] = true
		}
		assert.True(t, seen[c.Baseline], "%s: baseline %q is not an entry", c.Name(), c.Baseline)
		assert.True(t, c.Latency)
		assert.NotEmpty(t, c.Server)
		switch c.Params {
		case "Phase=steady":
			assert.Equal(t, 3, c.Workers)
			assert.Equal(t, "dedicated", c.Baseline)
		case "Phase=oversubscribed":
			assert.Equal(t, 12, c.Workers)
		case "Phase=nopool":
			assert.Equal(t, 3, c.Workers)
			assert.Equal(t, "poolkit", c.Baseline)
			assert.NotZero(t, c.TimeWaitPort, "the no-pool phase counts TIME_WAIT")
		default:
			t.Errorf("%s: unexpected phase", c.Name())
		}
	}
}

// TestE2EEntriesRun runs a few requests of every entry of every end-to-end
// case on each of its goroutines: against the echo server always, and
// against Redis and PostgreSQL where the environment names them. Every entry
// counts the connections it dials.
func TestE2EEntriesRun(t *testing.T) {
	env := openE2E(t)
	for _, c := range env.Cases(context.Background(), 2) {
		for _, e := range c.Entries {
			t.Run(c.Sub()+"/"+e.Key, func(t *testing.T) {
				in, err := e.Setup()
				require.NoError(t, err)
				defer in.Close()
				ops := make([]workload.Op, c.Workers)
				for i := range ops {
					ops[i] = in.Worker(i)
				}
				for _, op := range ops {
					for range 3 {
						require.NoError(t, op())
					}
				}
				require.NotNil(t, in.Dials)
				dials := in.Dials()
				switch e.Name {
				case "no pool":
					assert.Equal(t, int64(3*c.Workers), dials, "a dial per request")
				case "dedicated":
					assert.Equal(t, int64(c.Workers), dials, "a connection per goroutine")
				default:
					// One goroutine at a time: a pool needs one connection,
					// perhaps a second where a release is asynchronous.
					assert.GreaterOrEqual(t, dials, int64(1))
					assert.LessOrEqual(t, dials, int64(2))
				}
			})
		}
	}
}
