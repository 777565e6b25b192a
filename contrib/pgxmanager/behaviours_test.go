package pgxmanager_test

// pgxpool's behaviours, as its own tests state them, checked on the facade
// against the real server. The differences are in MIGRATING.md.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// waitTotal waits until the pool has n connections (TotalConns: closes are
// counted once Manager.Close returns, on the pool's goroutines).
func waitTotal(t *testing.T, p *pgxmanager.Pool, n int32) {
	t.Helper()
	eventually(t, 10*time.Second, func() (bool, string) {
		got := p.Stat().TotalConns()
		return got == n, fmt.Sprintf("%d connections, want %d", got, n)
	})
}

func TestOpenKeepsTheConnectionString(t *testing.T) {
	p, err := pgxmanager.Open(dsn(t), pool.Config{})
	require.NoError(t, err)
	defer p.Close(context.Background())
	assert.Equal(t, dsn(t), p.Config().ConnString())
}

func TestOpenConfigReturnsTheConfigItWasGiven(t *testing.T) {
	cfg, err := pgxmanager.ParsePoolConfig(dsn(t))
	require.NoError(t, err)
	cfg.AfterConnect = func(context.Context, *pgx.Conn) error { return nil }
	p := openConfig(t, cfg)
	got := p.Config()
	assert.Equal(t, cfg.ConnString(), got.ConnString())
	assert.Equal(t, cfg.Pool, got.Pool)
	assert.NotNil(t, got.AfterConnect)
	assert.Nil(t, got.BeforeConnect)
	assert.Equal(t, cfg.ConnConfig.RuntimeParams, got.ConnConfig.RuntimeParams)
}

func TestPoolConfigCopy(t *testing.T) {
	orig, err := pgxmanager.ParsePoolConfig("postgres://jack:secret@localhost:5432/mydb?application_name=pgxtest&search_path=myschema&connect_timeout=5&pool_max_conns=7")
	require.NoError(t, err)
	c := orig.Copy()
	assert.Equal(t, orig.ConnString(), c.ConnString())
	assert.Equal(t, orig.Pool, c.Pool)
	assert.Equal(t, orig.ConnConfig.RuntimeParams, c.ConnConfig.RuntimeParams)
	assert.Equal(t, orig.ConnConfig.ConnectTimeout, c.ConnConfig.ConnectTimeout)
	c.ConnConfig.RuntimeParams["search_path"] = "other"
	assert.Equal(t, "myschema", orig.ConnConfig.RuntimeParams["search_path"], "a deep copy")

	copied, err := pgxmanager.ParsePoolConfig(dsn(t))
	require.NoError(t, err)
	p := openConfig(t, copied.Copy())
	require.NoError(t, p.Ping(ctxFor(t, 10*time.Second)), "a copy connects")
}

// The pool's first connect, made by its maintainer for MinIdle, fails; its
// error is not kept: an Acquire connects again and returns its own error.
func TestInitialConnectErrorIsNotReturnedByAcquire(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	cfg.Pool.MaxSize, cfg.Pool.MinIdle = 1, 1
	initial, later := errors.New("initial connect failed"), errors.New("acquired connect failed")
	var attempts atomic.Int32
	cfg.BeforeConnect = func(context.Context, *pgx.ConnConfig) error {
		if attempts.Add(1) == 1 {
			return initial
		}
		return later
	}
	p := openConfig(t, cfg)
	eventually(t, 10*time.Second, func() (bool, string) {
		return p.Stats().ConnectErrors >= 1, "the maintainer has not tried to connect"
	})
	_, err := p.Acquire(ctxFor(t, 10*time.Second))
	require.ErrorIs(t, err, later)
	require.NotErrorIs(t, err, initial)
}

// A connect outlives the Acquire that caused it: the caller's context ends
// before the dial (BeforeConnect cancels it), the Exec fails with it, and
// the connection is made and pooled all the same.
func TestConnectIgnoresTheAcquirersContext(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	var cancel context.CancelFunc
	var mu sync.Mutex
	cfg.BeforeConnect = func(context.Context, *pgx.ConnConfig) error {
		mu.Lock()
		defer mu.Unlock()
		cancel()
		return nil
	}
	p := openConfig(t, cfg)
	assert.Zero(t, p.Stat().TotalConns())
	mu.Lock()
	ctx, c := context.WithCancel(context.Background())
	cancel = c
	mu.Unlock()
	defer c()
	_, err := p.Exec(ctx, "SELECT 1")
	require.ErrorIs(t, err, context.Canceled)
	waitTotal(t, p, 1)
}

// Detach (pgxpool's Hijack) takes a connection out of the pool: the caller
// owns and closes it.
func TestDetachTakesTheConnectionOutOfThePool(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 4})
	ctx := ctxFor(t, 10*time.Second)
	l, err := p.Acquire(ctx)
	require.NoError(t, err)
	before := p.Stat().TotalConns()
	c := l.Detach()
	defer c.Close(context.Background())
	assert.Equal(t, before-1, p.Stat().TotalConns())
	var n int32
	require.NoError(t, c.QueryRow(ctx, "SELECT 1").Scan(&n))
	assert.EqualValues(t, 1, n)
}

// Idle connections whose backends were terminated are found before they
// are handed out: Ping succeeds on a new connection, and the dead ones are
// closed.
func TestAcquireChecksIdleConnections(t *testing.T) {
	a := dialAdmin(t)
	name := uniqueName(t)
	p := openPool(t, name, pool.Config{MaxSize: 4})
	ctx := ctxFor(t, 20*time.Second)
	var held []pool.Lease[*pgx.Conn]
	var old []*pgx.Conn
	for range 3 {
		l, err := p.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, l)
		old = append(old, l.Value())
	}
	for _, l := range held {
		l.Release()
	}
	require.EqualValues(t, 3, p.Stat().TotalConns())
	require.Equal(t, 3, a.terminate(name))
	require.NoError(t, p.Ping(ctx))
	waitTotal(t, p, 1)
	l, err := p.Acquire(ctx)
	require.NoError(t, err)
	defer l.Release()
	for _, c := range old {
		assert.NotSame(t, c, l.Value())
	}
}

func TestMaxSizeOfMaxInt32(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: math.MaxInt32})
	require.NoError(t, p.Ping(ctxFor(t, 10*time.Second)))
	assert.EqualValues(t, math.MaxInt32, p.Stat().MaxConns())
}

// A connection released after its lifetime is closed, not pooled.
func TestReleaseChecksTheLifetime(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	cfg.Pool.MaxLifetime = 250 * time.Millisecond
	p := openConfig(t, cfg)
	l, err := p.Acquire(ctxFor(t, 10*time.Second))
	require.NoError(t, err)
	time.Sleep(cfg.Pool.MaxLifetime)
	l.Release()
	waitTotal(t, p, 0)
	waitClosed(t, p, pool.CloseLifetime, 1)
}

// A connection released with a result not read to its end, or closed, is
// closed, not pooled.
func TestReleaseClosesBusyAndClosedConnections(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 4})
	ctx := ctxFor(t, 10*time.Second)
	l, err := p.Acquire(ctx)
	require.NoError(t, err)
	_, err = l.Value().Query(ctx, "SELECT generate_series(1, 10)")
	require.NoError(t, err)
	l.Release()
	waitTotal(t, p, 0)

	l, err = p.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, l.Value().Close(ctx))
	assert.EqualValues(t, 1, p.Stat().TotalConns())
	l.Release()
	waitTotal(t, p, 0)
}

// A connection released inside a transaction, failed or not, is closed:
// the next Acquire gets another backend, outside any transaction.
func TestReleaseClosesConnectionsInATransaction(t *testing.T) {
	for _, failed := range []bool{false, true} {
		t.Run(fmt.Sprintf("failed=%v", failed), func(t *testing.T) {
			p := openPool(t, uniqueName(t), pool.Config{MaxSize: 4})
			ctx := ctxFor(t, 10*time.Second)
			l, err := p.Acquire(ctx)
			require.NoError(t, err)
			pid := l.Value().PgConn().PID()
			_, err = l.Value().Exec(ctx, "BEGIN")
			require.NoError(t, err)
			want := byte('T')
			if failed {
				_, err = l.Value().Exec(ctx, "selct")
				require.Error(t, err)
				want = 'E'
			}
			require.Equal(t, want, l.Value().PgConn().TxStatus())
			l.Release()
			l, err = p.Acquire(ctx)
			require.NoError(t, err)
			defer l.Release()
			assert.NotEqual(t, pid, l.Value().PgConn().PID())
			assert.Equal(t, byte('I'), l.Value().PgConn().TxStatus())
		})
	}
}

// MinIdle (pgxpool's MinConns and MinIdleConns) is reached in the
// background, with no acquire and no PrepareConn; a connection closed
// while leased is replaced.
func TestMinIdleIsReachedInTheBackground(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	cfg.Pool.MaxSize, cfg.Pool.MinIdle = 15, 12
	var prepared, connects atomic.Int32
	cfg.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) { prepared.Add(1); return true, nil }
	cfg.BeforeConnect = func(context.Context, *pgx.ConnConfig) error { connects.Add(1); return nil }
	p := openConfig(t, cfg)
	eventually(t, 20*time.Second, func() (bool, string) {
		s := p.Stat()
		return s.IdleConns() == 12 && s.TotalConns() == 12, fmt.Sprintf("%d idle of %d", s.IdleConns(), s.TotalConns())
	})
	assert.Zero(t, p.Stat().AcquireCount())
	assert.Zero(t, prepared.Load())
	assert.EqualValues(t, 12, connects.Load())

	l, err := p.Acquire(ctxFor(t, 10*time.Second))
	require.NoError(t, err)
	require.NoError(t, l.Value().Close(context.Background()))
	l.Release()
	eventually(t, 20*time.Second, func() (bool, string) {
		s := p.Stat()
		return s.IdleConns() == 12 && s.TotalConns() == 12, fmt.Sprintf("%d idle of %d", s.IdleConns(), s.TotalConns())
	})
}

// A connection idle past its lifetime is closed by the Acquire that finds
// it, which then connects another; one with no lifetime limit is handed out
// again and again, whatever the health checks do.
func TestAcquireAndLifetimes(t *testing.T) {
	t.Run("Expired", func(t *testing.T) {
		cfg := poolConfig(t, uniqueName(t))
		cfg.Pool.MaxLifetime, cfg.Pool.HealthCheckPeriod = 250*time.Millisecond, 10*time.Second
		p := openConfig(t, cfg)
		ctx := ctxFor(t, 10*time.Second)
		require.NoError(t, p.Ping(ctx))
		require.EqualValues(t, 1, p.Stat().TotalConns())
		time.Sleep(cfg.Pool.MaxLifetime + 100*time.Millisecond)
		require.NoError(t, p.Ping(ctx))
		eventually(t, 10*time.Second, func() (bool, string) {
			s := p.Stat()
			return s.MaxLifetimeDestroyCount() == 1 && s.TotalConns() == 1, fmt.Sprintf("%d closed for their lifetime", s.MaxLifetimeDestroyCount())
		})
	})
	t.Run("Unlimited", func(t *testing.T) {
		cfg := poolConfig(t, uniqueName(t))
		cfg.Pool.MaxLifetime, cfg.Pool.MaxSize, cfg.Pool.HealthCheckPeriod = -1, 1, 100*time.Millisecond
		p := openConfig(t, cfg)
		ctx := ctxFor(t, 10*time.Second)
		l, err := p.Acquire(ctx)
		require.NoError(t, err)
		first := l.Value()
		l.Release()
		time.Sleep(500 * time.Millisecond) // several health-check periods
		for range 5 {
			l, err := p.Acquire(ctx)
			require.NoError(t, err)
			assert.Same(t, first, l.Value())
			l.Release()
		}
		assert.Zero(t, p.Stat().MaxLifetimeDestroyCount())
		assert.EqualValues(t, 1, p.Stat().TotalConns())
	})
}

// A ping that does not answer within PingTimeout fails the connection: the
// Acquire connects another and succeeds.
func TestPingTimeoutReplacesTheConnection(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	conns := dialFaulty(cfg.Config)
	cfg.PingTimeout = 200 * time.Millisecond
	cfg.Pool.MaxSize = 1
	var original atomic.Pointer[pgx.Conn]
	cfg.ShouldPing = func(_ context.Context, sp pgxmanager.ShouldPingParams) bool { return sp.Conn == original.Load() }
	p := openConfig(t, cfg)
	ctx := ctxFor(t, 20*time.Second)
	l, err := p.Acquire(ctx)
	require.NoError(t, err)
	original.Store(l.Value())
	l.Release()
	release := (<-conns).holdReads() // the server's answers come too late
	defer release()
	l, err = p.Acquire(ctx)
	require.NoError(t, err)
	assert.NotSame(t, original.Load(), l.Value(), "the connection whose ping timed out was handed out")
	l.Release()
	assert.EqualValues(t, 1, p.Stat().TotalConns())
	require.NoError(t, ctx.Err())
}

func TestQueryUnderConcurrentLoad(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 8})
	ctx := ctxFor(t, 60*time.Second)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			rows, err := p.Query(ctx, "SELECT generate_series(1, $1::int)", 10)
			if !assert.NoError(t, err) {
				return
			}
			ns, err := pgx.CollectRows(rows, pgx.RowTo[int32])
			assert.NoError(t, err)
			assert.Len(t, ns, 10)
			var what, who string
			assert.NoError(t, p.QueryRow(ctx, "SELECT 'hello', $1::text", "world").Scan(&what, &who))
		})
	}
	wg.Wait()
	requireNoneLeased(t, p, "100 goroutines")
}

// pgx.BeginFunc nests through savepoints, on the facade and on its Tx: an
// inner rollback undoes only the inner work.
func TestBeginFuncNests(t *testing.T) {
	for _, rollbackInner := range []bool{false, true} {
		t.Run(fmt.Sprintf("rollbackInner=%v", rollbackInner), func(t *testing.T) {
			p := openPool(t, uniqueName(t), pool.Config{MaxSize: 1}) // one connection: the temporary table stays visible
			ctx := ctxFor(t, 20*time.Second)
			_, err := p.Exec(ctx, "CREATE TEMP TABLE pgxm_nest (id int UNIQUE)")
			require.NoError(t, err)
			inner := errors.New("do a rollback")
			err = pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, "INSERT INTO pgxm_nest VALUES (1)"); err != nil {
					return err
				}
				err := pgx.BeginFunc(ctx, tx, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, "INSERT INTO pgxm_nest VALUES (2)"); err != nil {
						return err
					}
					if rollbackInner {
						return inner
					}
					return pgx.BeginFunc(ctx, tx, func(tx pgx.Tx) error {
						_, err := tx.Exec(ctx, "INSERT INTO pgxm_nest VALUES (3)")
						return err
					})
				})
				if rollbackInner {
					if !errors.Is(err, inner) {
						return fmt.Errorf("inner: %w", err)
					}
					_, err = tx.Exec(ctx, "INSERT INTO pgxm_nest VALUES (3)")
				}
				return err
			})
			require.NoError(t, err)
			var n int
			require.NoError(t, p.QueryRow(ctx, "SELECT count(*) FROM pgxm_nest").Scan(&n))
			if rollbackInner {
				assert.Equal(t, 2, n)
			} else {
				assert.Equal(t, 3, n)
			}
			requireNoneLeased(t, p, "BeginFunc")
		})
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	p, err := pgxmanager.Open(dsn(t), pool.Config{})
	require.NoError(t, err)
	ctx := ctxFor(t, 10*time.Second)
	require.NoError(t, p.Ping(ctx))
	require.NoError(t, p.Close(ctx))
	require.NoError(t, p.Close(ctx))
}

// Closing a batch's results twice, as a deferred Close does after an
// explicit one, is harmless, from many goroutines at once.
func TestBatchCloseTwice(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 8})
	ctx := ctxFor(t, 60*time.Second)
	var wg sync.WaitGroup
	for range 1000 {
		wg.Go(func() {
			b := &pgx.Batch{}
			b.Queue("SELECT 1")
			b.Queue("SELECT 2")
			br := p.SendBatch(ctx, b)
			defer br.Close()
			var n int32
			if assert.NoError(t, br.QueryRow().Scan(&n)) {
				assert.EqualValues(t, 1, n)
			}
			if assert.NoError(t, br.QueryRow().Scan(&n)) {
				assert.EqualValues(t, 2, n)
			}
			assert.NoError(t, br.Close())
		})
	}
	wg.Wait()
	requireNoneLeased(t, p, "1000 batches")
}

// A batch that begins a transaction (pgx.Batch.BeginTx) keeps its
// connection for the transaction: Close leaves it leased, the Tx's end
// releases it, whatever became of the batch.
func TestBatchTransactions(t *testing.T) {
	ctx := ctxFor(t, 30*time.Second)
	t.Run("Commit", func(t *testing.T) {
		p := openPool(t, uniqueName(t), pool.Config{MaxSize: 2})
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{})
		b.Queue("SELECT 1")
		br := p.SendBatch(ctx, b)
		tx := br.Tx()
		require.NotNil(t, tx)
		defer tx.Rollback(ctx)
		require.NoError(t, br.Close())
		require.EqualValues(t, 1, p.Stat().AcquiredConns())
		var n int32
		require.NoError(t, tx.QueryRow(ctx, "SELECT 2").Scan(&n))
		require.EqualValues(t, 2, n)
		require.NoError(t, tx.Commit(ctx))
		require.Zero(t, p.Stat().AcquiredConns())
		require.EqualValues(t, 1, p.Stat().TotalConns())
	})
	t.Run("RollbackAfterQueryError", func(t *testing.T) {
		p := openPool(t, uniqueName(t), pool.Config{MaxSize: 2})
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{})
		b.Queue("SELECT 1/0")
		br := p.SendBatch(ctx, b)
		tx := br.Tx()
		require.Error(t, br.Close())
		require.EqualValues(t, 1, p.Stat().AcquiredConns())
		require.NoError(t, tx.Rollback(ctx))
		require.Zero(t, p.Stat().AcquiredConns())
		require.EqualValues(t, 1, p.Stat().TotalConns())
	})
	t.Run("BeginFails", func(t *testing.T) {
		p := openPool(t, uniqueName(t), pool.Config{MaxSize: 2})
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{BeginQuery: "begin garbage"})
		b.Queue("SELECT 1")
		br := p.SendBatch(ctx, b)
		tx := br.Tx()
		require.Error(t, br.Close())
		require.ErrorIs(t, tx.Rollback(ctx), pgx.ErrTxClosed, "the transaction never began")
		require.Zero(t, p.Stat().AcquiredConns(), "the Rollback released the connection all the same")
		require.EqualValues(t, 1, p.Stat().TotalConns())
	})
	t.Run("NoBeginTx", func(t *testing.T) {
		p := openPool(t, uniqueName(t), pool.Config{MaxSize: 2})
		b := &pgx.Batch{}
		b.Queue("SELECT 1")
		br := p.SendBatch(ctx, b)
		require.Nil(t, br.Tx())
		require.NoError(t, br.Close())
		require.Zero(t, p.Stat().AcquiredConns())
		require.NoError(t, p.Close(ctx))
		require.Nil(t, p.SendBatch(ctx, b).Tx())
	})
	t.Run("OnALeasedConnection", func(t *testing.T) {
		p := openPool(t, uniqueName(t), pool.Config{MaxSize: 2})
		l, err := p.Acquire(ctx)
		require.NoError(t, err)
		defer l.Release()
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{})
		b.Queue("SELECT 1")
		br := l.Value().SendBatch(ctx, b)
		tx := br.Tx()
		require.NotNil(t, tx)
		require.NoError(t, br.Close())
		require.Equal(t, byte('T'), l.Value().PgConn().TxStatus())
		require.NoError(t, tx.Commit(ctx))
		require.EqualValues(t, 1, p.Stat().AcquiredConns(), "the lease, not the Tx, holds the connection")
	})
	t.Run("CloseAgainAfterCommit", func(t *testing.T) {
		p := openPool(t, uniqueName(t), pool.Config{MaxSize: 1})
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{})
		b.Queue("SELECT 1")
		br := p.SendBatch(ctx, b)
		require.NoError(t, br.Close())
		require.NoError(t, br.Tx().Commit(ctx))
		// The only connection is back and in use by another goroutine: the
		// results, closed again as a deferred Close does, must not touch it
		// (the race detector watches).
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 50 {
				_, err := p.Exec(ctx, "SELECT 1")
				assert.NoError(t, err)
			}
		}()
		for range 50 {
			require.NoError(t, br.Close())
		}
		<-done
	})
	t.Run("AcquireError", func(t *testing.T) {
		p := openPool(t, uniqueName(t), pool.Config{MaxSize: 1})
		l, err := p.Acquire(ctx)
		require.NoError(t, err)
		defer l.Release()
		b := &pgx.Batch{}
		b.BeginTx(pgx.TxOptions{})
		b.Queue("SELECT 1")
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		br := p.SendBatch(short, b)
		tx := br.Tx()
		require.NotNil(t, tx, "a closed Tx, so that the usual deferred Rollback is safe")
		require.ErrorIs(t, tx.Rollback(ctx), pgx.ErrTxClosed)
		require.ErrorIs(t, br.Close(), context.DeadlineExceeded)
	})
}

// The methods of pgx.Conn on a leased connection, and of the facade's Tx.
func TestLeasedConnectionAndTxMethods(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 2})
	ctx := ctxFor(t, 20*time.Second)
	l, err := p.Acquire(ctx)
	require.NoError(t, err)
	exerciseQueries(t, ctx, l.Value())
	l.Release()

	tx, err := p.Begin(ctx)
	require.NoError(t, err)
	exerciseQueries(t, ctx, tx)
	require.NoError(t, tx.Rollback(ctx))
	requireNoneLeased(t, p, "the Tx's Rollback")
}

// exerciseQueries runs each query method of db once, as pgxpool's tests
// do, COPY into a temporary table included.
func exerciseQueries(t *testing.T, ctx context.Context, db interface {
	dbtx
}) {
	t.Helper()
	tag, err := db.Exec(ctx, "SET TIME ZONE 'America/Chicago'")
	require.NoError(t, err)
	assert.Equal(t, "SET", tag.String())
	rows, err := db.Query(ctx, "SELECT generate_series(1, $1::int)", 10)
	require.NoError(t, err)
	var sum int32
	for rows.Next() {
		var n int32
		require.NoError(t, rows.Scan(&n))
		sum += n
	}
	require.NoError(t, rows.Err())
	assert.EqualValues(t, 55, sum)
	var what, who string
	require.NoError(t, db.QueryRow(ctx, "SELECT 'hello', $1::text", "world").Scan(&what, &who))
	assert.Equal(t, "hello world", what+" "+who)
	b := &pgx.Batch{}
	b.Queue("SELECT 1")
	b.Queue("SELECT 2")
	br := db.SendBatch(ctx, b)
	var n int32
	require.NoError(t, br.QueryRow().Scan(&n))
	require.NoError(t, br.QueryRow().Scan(&n))
	assert.EqualValues(t, 2, n)
	require.NoError(t, br.Close())
	_, err = db.Exec(ctx, "CREATE TEMP TABLE pgxm_copy_all (a int2, b int4, c int8, d varchar, e text, f date, g timestamptz)")
	require.NoError(t, err)
	tz := time.Date(2010, 2, 3, 4, 5, 6, 0, time.Local)
	in := [][]any{
		{int16(0), int32(1), int64(2), "abc", "efg", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC), tz},
		{nil, nil, nil, nil, nil, nil, nil},
	}
	copied, err := db.CopyFrom(ctx, pgx.Identifier{"pgxm_copy_all"}, []string{"a", "b", "c", "d", "e", "f", "g"}, pgx.CopyFromRows(in))
	require.NoError(t, err)
	assert.EqualValues(t, len(in), copied)
	rows, err = db.Query(ctx, "SELECT * FROM pgxm_copy_all")
	require.NoError(t, err)
	var out [][]any
	for rows.Next() {
		v, err := rows.Values()
		require.NoError(t, err)
		out = append(out, v)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, in, out)
	_, err = db.Exec(ctx, "DROP TABLE pgxm_copy_all")
	require.NoError(t, err)
}

// pgxpool's acquire tracer's equivalent is the pool's Observer: its
// AcquireStart's context is the rest of the Acquire's, and AcquireEnd sees
// the outcome.
func TestObserverTracesAcquires(t *testing.T) {
	type key struct{}
	var started, ended atomic.Int32
	var lastErr atomic.Value
	obs := &acquireObserver{
		start: func(ctx context.Context) context.Context {
			started.Add(1)
			return context.WithValue(ctx, key{}, "traced")
		},
		end: func(ctx context.Context, ev pool.AcquireEvent) {
			if ctx.Value(key{}) == "traced" {
				ended.Add(1)
			}
			lastErr.Store(fmt.Sprint(ev.Err))
		},
	}
	cfg := poolConfig(t, uniqueName(t))
	cfg.Pool.Observer = obs
	cfg.Pool.MaxSize = 1
	p := openConfig(t, cfg)
	require.NoError(t, p.Ping(ctxFor(t, 10*time.Second)))
	assert.EqualValues(t, 1, started.Load())
	assert.EqualValues(t, 1, ended.Load())
	assert.Equal(t, "<nil>", lastErr.Load())
	// An Acquire that fails while it waits (pgxpool also traces one whose
	// context had ended before it began; pool returns that at once, untraced).
	l, err := p.Acquire(ctxFor(t, 10*time.Second))
	require.NoError(t, err)
	defer l.Release()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = p.Acquire(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.EqualValues(t, 3, ended.Load())
	assert.Contains(t, lastErr.Load(), "canceled")
}

type acquireObserver struct {
	pool.NopObserver
	start func(context.Context) context.Context
	end   func(context.Context, pool.AcquireEvent)
}

func (o *acquireObserver) AcquireStart(ctx context.Context) context.Context { return o.start(ctx) }
func (o *acquireObserver) AcquireEnd(ctx context.Context, ev pool.AcquireEvent) {
	o.end(ctx, ev)
}
