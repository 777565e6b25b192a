package e2e

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// closedAddr returns an address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestOpenSkipsServersThatDoNotAnswer(t *testing.T) {
	addr := closedAddr(t)
	env, err := Open(context.Background(), Options{
		RedisAddr:   addr,
		PostgresDSN: "postgres://u:secret@" + addr + "/db?sslmode=disable",
	})
	require.NoError(t, err)
	defer env.Close()
	assert.Equal(t, []string{ServerEcho}, env.Servers())
	require.Len(t, env.Skipped, 2)
	assert.Equal(t, ServerRedis, env.Skipped[0].Server)
	assert.Contains(t, env.Skipped[0].Reason, addr)
	assert.Equal(t, ServerPostgres, env.Skipped[1].Server)
	assert.Contains(t, env.Skipped[1].Reason, addr)
	assert.NotContains(t, env.Skipped[1].Reason, "secret", "the password is not printed")
	assert.Len(t, env.Cases(context.Background(), 2), len(Phases), "the echo server's phases only")
}

func TestOpenLeavesOutWhatIsNotAskedFor(t *testing.T) {
	env, err := Open(context.Background(), Options{})
	require.NoError(t, err)
	defer env.Close()
	assert.Equal(t, []string{ServerEcho}, env.Servers())
	assert.Empty(t, env.Skipped)
}

func TestRedactHidesPasswords(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://postgres@127.0.0.1:5432/test?sslmode=disable": "postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
		"postgres://u:secret@h/db":                                "postgres://u:xxxxx@h/db",
		"postgres://u@h/db?password=secret":                       "postgres://u@h/db?password=xxxxx",
		"host=h user=u password=secret dbname=d":                  "host=h user=u password=xxxxx dbname=d",
		"host=h password='se cret' dbname=d":                      "host=h password=xxxxx dbname=d",
	} {
		assert.Equal(t, want, Redact(in), in)
	}
}

func TestPortOf(t *testing.T) {
	assert.Equal(t, 6379, portOf("127.0.0.1:6379"))
	assert.Equal(t, 5432, portOf("[::1]:5432"))
	assert.Equal(t, 0, portOf("nonsense"))
}

// TestPgBouncerRowsRunThroughAPgBouncerOfTheirOwn starts PgBouncer in front
// of $POOLKIT_POSTGRES_DSN's server; it skips where either is missing.
func TestPgBouncerRowsRunThroughAPgBouncerOfTheirOwn(t *testing.T) {
	opt := FromEnv()
	if opt.PostgresDSN == "" {
		t.Skip(EnvPostgresDSN + " is not set")
	}
	opt.RedisAddr, opt.PgBouncer, opt.MaxSize = "", true, 2
	env, err := Open(context.Background(), opt)
	require.NoError(t, err)
	defer env.Close()
	for _, s := range env.Skipped {
		if s.Server == ServerPgbouncer {
			t.Skip("pgbouncer: " + s.Reason)
		}
	}
	require.Equal(t, []string{ServerEcho, ServerPostgres, ServerPgbouncer}, env.Servers())
	var names []string
	for _, c := range env.Cases(context.Background(), 2) {
		if c.Group != "Server="+ServerPgbouncer {
			continue
		}
		names = append(names, c.Name())
		require.Len(t, c.Entries, 2)
		for _, e := range c.Entries {
			in, err := e.Setup()
			require.NoError(t, err, e.Name)
			op := in.Worker(0)
			for range 20 { // more than one transaction per server connection
				require.NoError(t, op(), "%s through PgBouncer in transaction mode", e.Name)
			}
			in.Close()
		}
	}
	assert.Equal(t, []string{"E2E/Server=pgbouncer/Phase=steady", "E2E/Server=pgbouncer/Phase=oversubscribed"}, names)
}
