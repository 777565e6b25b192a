package pgxmanager_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// retryPool returns a pool of up to two connections over faultConns, with
// no ping before reuse (so that a broken connection is found by the query,
// not by Recycle), and the channel of its faultConns.
func retryPool(t *testing.T, opts pgxmanager.Options) (*pgxmanager.Pool, <-chan *faultConn) {
	t.Helper()
	cfg := poolConfig(t, uniqueName(t))
	conns := dialFaulty(cfg.Config)
	cfg.PingAfter = -1
	cfg.Pool.MaxSize = 2
	cfg.Options = opts
	return openConfig(t, cfg), conns
}

// A call whose query failed before anything of it was written (the socket
// refused the write: pgconn.SafeToRetry) is retried once on another
// connection, and succeeds; the first connection is destroyed. Each query
// method that retries is tried, with its statement new to the connection
// (the failure comes at the Prepare) and already prepared (it comes with
// the result).
func TestQueryTheServerNeverSawIsRetried(t *testing.T) {
	type call func(ctx context.Context, p *pgxmanager.Pool) error
	queryRow := func(ctx context.Context, p *pgxmanager.Pool) error {
		var n int
		if err := p.QueryRow(ctx, "SELECT $1::int + 1", 41).Scan(&n); err != nil {
			return err
		}
		if n != 42 {
			return fmt.Errorf("got %d", n)
		}
		return nil
	}
	query := func(ctx context.Context, p *pgxmanager.Pool) error {
		rows, err := p.Query(ctx, "SELECT generate_series(1, $1::int)", 3)
		if err != nil {
			return err
		}
		ns, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err == nil && len(ns) != 3 {
			err = fmt.Errorf("got %v", ns)
		}
		return err
	}
	calls := map[string]call{
		"Exec": func(ctx context.Context, p *pgxmanager.Pool) error {
			_, err := p.Exec(ctx, "SELECT $1::int", 1)
			return err
		},
		"Query":    query,
		"QueryRow": queryRow,
		"Begin": func(ctx context.Context, p *pgxmanager.Pool) error {
			tx, err := p.Begin(ctx)
			if err != nil {
				return err
			}
			return tx.Rollback(ctx)
		},
		"BeginTx": func(ctx context.Context, p *pgxmanager.Pool) error {
			tx, err := p.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
			if err != nil {
				return err
			}
			return tx.Commit(ctx)
		},
		"Ping": func(ctx context.Context, p *pgxmanager.Pool) error { return p.Ping(ctx) },
	}
	for name, c := range calls {
		for _, prepared := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/prepared=%v", name, prepared), func(t *testing.T) {
				p, conns := retryPool(t, pgxmanager.Options{})
				ctx := ctxFor(t, 20*time.Second)
				if prepared {
					require.NoError(t, c(ctx, p))
				} else {
					require.NoError(t, p.Ping(ctx))
				}
				fc := <-conns
				fc.fail.Store(true)

				require.NoError(t, c(ctx, p), "the retry on a new connection")
				assert.EqualValues(t, 1, p.Stat().RetryCount())
				assert.EqualValues(t, 2, p.Stats().Created)
				waitClosed(t, p, pool.CloseDestroy, 1)
				requireNoneLeased(t, p, name)
			})
		}
	}
}

// With retries off, the failure reaches the caller, and it is one that
// pgconn says was safe to retry.
func TestDisableRetryReturnsTheFailure(t *testing.T) {
	p, conns := retryPool(t, pgxmanager.Options{DisableRetry: true})
	ctx := ctxFor(t, 20*time.Second)
	require.NoError(t, p.Ping(ctx))
	(<-conns).fail.Store(true)
	_, err := p.Exec(ctx, "SELECT 1")
	require.Error(t, err)
	assert.True(t, pgconn.SafeToRetry(err), "%v", err)
	assert.Zero(t, p.Stat().RetryCount())
	require.NoError(t, p.Ping(ctx), "the broken connection was not kept")
}

// A call is retried once: when the second connection fails too, its
// failure is returned.
func TestRetryHappensOnce(t *testing.T) {
	p, conns := retryPool(t, pgxmanager.Options{})
	ctx := ctxFor(t, 20*time.Second)
	a, err := p.Acquire(ctx)
	require.NoError(t, err)
	b, err := p.Acquire(ctx)
	require.NoError(t, err)
	a.Release()
	b.Release()
	(<-conns).fail.Store(true)
	(<-conns).fail.Store(true)
	_, err = p.Exec(ctx, "SELECT 1")
	require.Error(t, err)
	assert.True(t, pgconn.SafeToRetry(err))
	assert.EqualValues(t, 1, p.Stat().RetryCount())
}

// A query the server received is never retried, whatever became of its
// connection: here the query terminates its own backend.
func TestQueryTheServerSawIsNotRetried(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 2})
	ctx := ctxFor(t, 20*time.Second)
	_, err := p.Exec(ctx, "SELECT pg_terminate_backend(pg_backend_pid())")
	require.Error(t, err)
	assert.False(t, pgconn.SafeToRetry(err))
	var n int
	err = p.QueryRow(ctx, "SELECT pg_terminate_backend(pg_backend_pid())::int").Scan(&n)
	require.Error(t, err)
	assert.Zero(t, p.Stat().RetryCount())
}

// In a private PostgreSQL whose every backend is terminated again and
// again between queries (pg_terminate_backend, 32 workers on a pool of 8),
// no query fails that was safe to retry: each such failure is retried on
// another connection. (Queries the server had received when it was told to
// terminate may fail: they are not retried.)
func TestNoSafeToRetryQueryFailsWhenEveryBackendIsKilled(t *testing.T) {
	pg := startPostgres(t)
	a := dialAdminAt(t, pg.dsn)
	name := uniqueName(t)
	cfg := &pgxmanager.PoolConfig{Config: configFor(t, pg.dsn, name),
		Pool: pool.Config{MaxSize: 8, AcquireTimeout: 10 * time.Second, ConnectTimeout: 5 * time.Second}}
	p := openConfig(t, cfg)

	const workers = 32
	var queries atomic.Int64
	var mu sync.Mutex
	var failed []error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				queries.Add(1)
				n := int64(g)*1_000_000 + int64(i)
				var got int64
				err := p.QueryRow(context.Background(), "SELECT $1::int8 * 2", n).Scan(&got)
				if err == nil && got != 2*n {
					err = fmt.Errorf("%w: %d * 2 = %d", errWrongResult, n, got)
				}
				if err != nil {
					mu.Lock()
					failed = append(failed, err)
					mu.Unlock()
				}
			}
		})
	}
	killed, rounds := 0, 0
	for end := time.Now().Add(faultDuration(t)); time.Now().Before(end); {
		if n, _ := a.backends(name); n == 0 {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		killed += a.terminate(name)
		rounds++
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	safe := 0
	for _, err := range failed {
		require.NotErrorIs(t, err, errWrongResult)
		if pgconn.SafeToRetry(err) {
			safe++
			t.Errorf("a query failed that was safe to retry: %v", err)
		}
	}
	t.Logf("queries=%d rounds=%d killed=%d failed=%d (safe to retry: %d) retried=%d",
		queries.Load(), rounds, killed, len(failed), safe, p.Stat().RetryCount())
	require.Positive(t, rounds)
	require.Greater(t, queries.Load(), int64(workers))
	for _, err := range failed {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			assert.Equal(t, "57P01", pgErr.Code, "only a query on a terminated backend may fail: %v", err)
		}
	}
}
