package pgxmanager_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/internal/testutil/pooltest"
	"github.com/poolkit/poolkit/pool"
)

// With health checks on, a pool whose every backend was terminated
// (pg_terminate_backend of all) hands out no dead connection once a period
// has passed: the checks (Recycle, which finds the server's FATAL message and
// the closed socket) close them, and the maintainer connects replacements up
// to MinIdle. The acquire path's own check would not catch them: a
// connection never handed out is not recycled before its first use.
func TestHealthChecksReplaceTerminatedBackends(t *testing.T) {
	a := dialAdmin(t)
	name := uniqueName(t)
	const n = 4
	events := pooltest.NewEvents()
	p, err := pool.New[*pgx.Conn](newManager(t, config(t, name)),
		pool.Config{MaxSize: n, MinIdle: n, HealthCheckPeriod: 50 * time.Millisecond, Observer: events})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, p.Close(ctx))
	})
	ctx := ctxFor(t, 30*time.Second)
	require.NoError(t, p.Warm(ctx))
	events.AwaitConnects(ctx, t, n) // Warm's
	// The server lists the backends asynchronously.
	eventually(t, 5*time.Second, func() (bool, string) {
		got, _ := a.backends(name)
		return got == n, fmt.Sprintf("%d backends", got)
	})
	rows, err := a.c.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", name)
	require.NoError(t, err)
	killed, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(t, err)
	require.Equal(t, n, a.terminate(name))

	// The health checks close every terminated backend's connection, and
	// the maintainer connects a replacement for each.
	events.AwaitHealthCloses(ctx, t, n)
	events.AwaitConnects(ctx, t, n)
	require.Equal(t, uint64(n), p.Stats().ClosedBy[pool.CloseHealthCheck])
	var ls []pool.Lease[*pgx.Conn]
	for range n {
		l, err := p.Acquire(ctx)
		require.NoError(t, err)
		require.NotContains(t, killed, int32(l.Value().PgConn().PID()), "a terminated backend was handed out")
		var one int
		require.NoError(t, l.Value().QueryRow(ctx, "SELECT 1").Scan(&one))
		ls = append(ls, l)
	}
	for _, l := range ls {
		l.Release()
	}
	require.Zero(t, p.Stats().ClosedBy[pool.CloseRecycle], "the health checks, not the acquires, found them")
}
