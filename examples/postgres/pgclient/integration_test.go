package pgclient_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/examples/internal/itest"
	"github.com/poolkit/poolkit/examples/postgres/pgclient"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

var errWrongResult = errors.New("wrong result")

// admin is a plain connection (no pool) for watching and terminating a
// test's backends.
type admin struct {
	t *testing.T
	c *pgconn.PgConn
}

// dialAdmin connects to $POOLKIT_POSTGRES_DSN (skipping the test if unset)
// and fails the test if the server does not answer. It returns the DSN.
func dialAdmin(t *testing.T) (string, *admin) {
	t.Helper()
	dsn := itest.PostgresDSN(t)
	cfg, err := pgclient.ParseConfig(dsn, itest.UniqueName(t)+"-admin")
	require.NoError(t, err, "parsing %s", itest.EnvPostgresDSN)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgconn.ConnectConfig(ctx, cfg)
	require.NoError(t, err, "PostgreSQL at %s does not answer", itest.EnvPostgresDSN)
	t.Cleanup(func() { pgclient.Manager{}.Close(c) })
	return dsn, &admin{t: t, c: c}
}

func (a *admin) query(sql string, args ...string) [][][]byte {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	params := make([][]byte, len(args))
	for i, s := range args {
		params[i] = []byte(s)
	}
	res := a.c.ExecParams(ctx, sql, params, nil, nil, nil).Read()
	require.NoError(a.t, res.Err, "admin: %s", sql)
	return res.Rows
}

// backends returns how many backends are named name.
func (a *admin) backends(name string) int {
	a.t.Helper()
	rows := a.query("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name)
	n, err := strconv.Atoi(string(rows[0][0]))
	require.NoError(a.t, err)
	return n
}

// terminate signals every backend named name to exit, then polls until
// they have (a terminated backend lingers in pg_stat_activity for a moment);
// it returns how many it signalled. pg_terminate_backend's own wait would
// poll every 100 ms, one backend after the other.
func (a *admin) terminate(name string) int {
	a.t.Helper()
	// MATERIALIZED: the filter must run before pg_terminate_backend, which
	// the planner could otherwise call on every backend, the admin's too.
	rows := a.query(`WITH t AS MATERIALIZED (SELECT pid FROM pg_stat_activity WHERE application_name = $1)
		SELECT pid FROM t WHERE pg_terminate_backend(pid)`, name)
	if len(rows) == 0 {
		return 0
	}
	pids := "{"
	for i, r := range rows {
		if i > 0 {
			pids += ","
		}
		pids += string(r[0])
	}
	pids += "}"
	itest.Eventually(a.t, 5*time.Second, func() (bool, string) {
		rows := a.query("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1::int[])", pids)
		return string(rows[0][0]) == "0", string(rows[0][0]) + " terminated backends still there"
	})
	return len(rows)
}

// waitGone polls until no backend is named name.
func (a *admin) waitGone(name string) {
	a.t.Helper()
	itest.Eventually(a.t, 5*time.Second, func() (bool, string) {
		n := a.backends(name)
		return n == 0, strconv.Itoa(n) + " backends named " + name + " still there"
	})
}

func open(t *testing.T, dsn, name string, cfg pool.Config) *pgclient.DB {
	t.Helper()
	pc, err := pgclient.ParseConfig(dsn, name)
	require.NoError(t, err)
	db, err := pgclient.Open(pgclient.Manager{Config: pc}, cfg)
	require.NoError(t, err)
	return db
}

func TestDBRunsQueriesOnPostgres(t *testing.T) {
	dsn, a := dialAdmin(t)
	name := itest.UniqueName(t)
	db := open(t, dsn, name, pool.Config{MaxSize: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	rows, err := db.Query(ctx, "SELECT $1::int + 1, NULL::text", "41")
	require.NoError(t, err)
	require.Equal(t, [][][]byte{{[]byte("42"), nil}}, rows)

	// An SQL error leaves the connection in the pool.
	_, err = db.Query(ctx, "SELECT 1/0")
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "22012", pgErr.Code) // division_by_zero
	rows, err = db.Query(ctx, "SELECT current_setting('application_name')")
	require.NoError(t, err)
	require.Equal(t, name, string(rows[0][0]))

	// A connection released inside a transaction is closed, not pooled.
	_, err = db.Query(ctx, "BEGIN")
	require.NoError(t, err)
	// Closes are counted when Manager.Close returns, on the pool's closer
	// goroutines: wait until none is in flight.
	require.Eventually(t, func() bool { return db.Stats().Closing == 0 }, 10*time.Second, time.Millisecond)
	s := db.Stats()
	require.EqualValues(t, 1, s.ClosedReleaseCheck)
	require.Zero(t, s.ClosedDestroy)

	_, err = db.Query(ctx, "SELECT 1")
	require.NoError(t, err)
	require.Equal(t, 1, a.backends(name))
	require.NoError(t, db.Close(ctx))
	a.waitGone(name)
}

func TestManagerRecycleRejectsATerminatedBackend(t *testing.T) {
	dsn, a := dialAdmin(t)
	name := itest.UniqueName(t)
	cfg, err := pgclient.ParseConfig(dsn, name)
	require.NoError(t, err)
	m := pgclient.Manager{Config: cfg, PingAfter: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := m.Connect(ctx)
	require.NoError(t, err)
	defer m.Close(c)
	met := manager.Metrics{LastUsed: time.Now(), Uses: 1}
	require.NoError(t, m.Recycle(ctx, c, met))

	require.Equal(t, 1, a.terminate(name))
	// The FATAL message and the close arrive asynchronously: poll. The peek
	// finds them with no ping (PingAfter is an hour).
	itest.Eventually(t, 5*time.Second, func() (bool, string) {
		return m.Recycle(ctx, c, met) != nil, "Recycle still passes a terminated backend"
	})
	require.ErrorIs(t, m.Recycle(ctx, c, met), pgclient.ErrNotReusable)
}

// While 32 goroutines run queries, the test terminates its pool's backends
// (pg_terminate_backend), again and again, and counts them in
// pg_stat_activity before each round and once the terminated ones have
// exited (not while they are exiting: a backend the pool has already
// dropped may linger on the server for a moment beside its replacement).
//
// What may fail, and the bound the test checks: a query in flight on a
// terminated backend fails and is retried once on another connection; it
// fails for good only if the retry's backend is terminated too. Every failed
// attempt destroys the connection it ran on, so failed attempts never exceed
// the backends terminated, and final failures are connection failures
// (FATAL 57P01 admin_shutdown, or the connection closed) only. Idle
// terminated connections are caught by Recycle's peek with no failed query.
func TestDBSurvivesTerminatedBackends(t *testing.T) {
	dsn, a := dialAdmin(t)
	name := itest.UniqueName(t)
	const (
		maxSize = 8
		workers = 32
	)
	db := open(t, dsn, name, pool.Config{MaxSize: maxSize, AcquireTimeout: 10 * time.Second, ConnectTimeout: 5 * time.Second})
	closed := false
	defer func() {
		if !closed {
			db.Close(context.Background())
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), itest.FaultDuration(t))
	defer cancel()
	queryCtx := context.Background() // queries are not cut short by the end of the run

	var (
		queries, failed atomic.Int64
		errMu           sync.Mutex
		errs            []error
	)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				n := strconv.Itoa(g*1_000_000 + i)
				queries.Add(1)
				rows, err := db.Query(queryCtx, "SELECT $1::int8 * 2", n)
				if err == nil {
					if want := strconv.Itoa(2 * (g*1_000_000 + i)); string(rows[0][0]) != want {
						err = fmt.Errorf("%w: got %s, want %s", errWrongResult, rows[0][0], want)
					}
				}
				if err != nil {
					failed.Add(1)
					errMu.Lock()
					errs = append(errs, err)
					errMu.Unlock()
				}
			}
		})
	}

	var killed, killRounds, maxSeen int
	sample := func() int {
		n := a.backends(name)
		maxSeen = max(maxSeen, n)
		return n
	}
	for ctx.Err() == nil {
		if sample() == 0 {
			time.Sleep(itest.PollInterval) // the pool is reconnecting: look again soon
			continue
		}
		killed += a.terminate(name)
		killRounds++
		sample()
		// Let the workload run on fresh connections for a moment.
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	sample()

	// Closes are counted when Manager.Close returns, on the pool's closer
	// goroutines: wait until none is in flight.
	require.Eventually(t, func() bool { return db.Stats().Closing == 0 }, 10*time.Second, time.Millisecond)
	s := db.Stats()
	t.Logf("queries=%d killRounds=%d killed=%d retries=%d failed=%d maxSeen=%d created=%d closedRecycle=%d closedDestroy=%d closedReleaseCheck=%d",
		queries.Load(), killRounds, killed, db.Retries(), failed.Load(), maxSeen, s.Created, s.ClosedRecycle, s.ClosedDestroy, s.ClosedReleaseCheck)

	require.LessOrEqual(t, maxSeen, maxSize, "the server saw more of the test's backends than MaxSize")
	require.Positive(t, killRounds, "no backend to terminate was ever seen")
	require.Greater(t, queries.Load(), int64(workers), "the workload barely ran")
	for _, err := range errs {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			require.Equal(t, "57P01", pgErr.Code, "only a query on a terminated backend may fail: %v", err)
		} else {
			require.NotErrorIs(t, err, errWrongResult)
			require.NotErrorIs(t, err, pool.ErrTimeout, "only a query on a terminated backend may fail")
			require.NotErrorIs(t, err, pool.ErrClosed)
		}
	}
	attemptsFailed := int64(db.Retries()) + failed.Load()
	require.LessOrEqual(t, attemptsFailed, int64(killed), "more failed attempts than terminated backends")
	require.LessOrEqual(t, 2*failed.Load(), attemptsFailed, "a query failed without its retry")
	require.EqualValues(t, attemptsFailed, s.ClosedDestroy, "the DB destroys exactly the connections that broke")

	closeCtx, cancelClose := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelClose()
	require.NoError(t, db.Close(closeCtx))
	closed = true
	require.Zero(t, db.Stats().Live)
	a.waitGone(name)
}
