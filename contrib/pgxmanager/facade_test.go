package pgxmanager_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// pgxpoolStat is pgxpool.Stat's method set, signatures included: code and
// dashboards written against it compile against *pgxmanager.Stat.
type pgxpoolStat interface {
	AcquireCount() int64
	AcquireDuration() time.Duration
	AcquiredConns() int32
	CanceledAcquireCount() int64
	ConstructingConns() int32
	EmptyAcquireCount() int64
	IdleConns() int32
	MaxConns() int32
	TotalConns() int32
	NewConnsCount() int64
	MaxLifetimeDestroyCount() int64
	MaxIdleDestroyCount() int64
	EmptyAcquireWaitTime() time.Duration
}

// dbtx is the interface sqlc generates for its queries.
type dbtx interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
	CopyFrom(ctx context.Context, tableName pgx.Identifier, columnNames []string, rowSrc pgx.CopyFromSource) (int64, error)
	SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
}

// named is what contrib/poolprom's NewPoolCollector and contrib/poolotel's
// ObservePool read of a pool: its figures, and the name they label them
// with.
type named interface {
	Stats() pool.Stats
	Name() string
}

var (
	_ pgxpoolStat = (*pgxmanager.Stat)(nil)
	_ dbtx        = (*pgxmanager.Pool)(nil)
	_ interface {
		Begin(context.Context) (pgx.Tx, error)
		BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
	} = (*pgxmanager.Pool)(nil)
	_ named = (*pgxmanager.Pool)(nil)
)

// A Pool is named by its pool's configuration (PoolConfig.Pool.Name, or
// the Name of the pool NewPool was given), so that the exporters label its
// figures as they label the pool's. No server is needed: nothing is
// dialled.
func TestPoolIsNamedByItsPoolConfig(t *testing.T) {
	cfg, err := pgxmanager.ParsePoolConfig("postgres://u@127.0.0.1:1/db")
	require.NoError(t, err)
	cfg.Pool.Name = "primary"
	p, err := pgxmanager.OpenConfig(cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close(context.Background())) }()
	assert.Equal(t, "primary", p.Name())
	assert.Equal(t, p.Pool().Name(), p.Name())

	q := pgxmanager.NewPool(p.Pool(), pgxmanager.Options{})
	assert.Equal(t, "primary", q.Name())
}

// Stat reads pool.Stats under pgxpool's names: each gauge and counter
// moves as the pool does.
func TestStatFollowsThePool(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	cfg.Pool.MaxSize = 2
	p := openConfig(t, cfg)
	ctx := ctxFor(t, 20*time.Second)

	s := p.Stat()
	assert.EqualValues(t, 2, s.MaxConns())
	assert.Zero(t, s.TotalConns())
	assert.Zero(t, s.NewConnsCount())

	rows, err := p.Query(ctx, "SELECT generate_series(1, 10)")
	require.NoError(t, err)
	s = p.Stat()
	assert.EqualValues(t, 1, s.AcquiredConns(), "the rows hold their connection")
	assert.EqualValues(t, 1, s.TotalConns())
	assert.EqualValues(t, 1, s.AcquireCount())
	assert.EqualValues(t, 1, s.NewConnsCount())
	rows.Close()
	s = p.Stat()
	assert.Zero(t, s.AcquiredConns())
	assert.EqualValues(t, 1, s.IdleConns())
	assert.EqualValues(t, 1, s.TotalConns())

	// Fill the pool, then make an Acquire wait, and another give up.
	var held []pool.Lease[*pgx.Conn]
	for range 2 {
		l, err := p.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, l)
	}
	before := p.Stat()
	got := make(chan pool.Lease[*pgx.Conn], 1)
	go func() {
		l, err := p.Acquire(ctx)
		assert.NoError(t, err)
		got <- l
	}()
	eventually(t, 10*time.Second, func() (bool, string) { return p.Stats().Waiting == 1, "the Acquire does not wait" })
	held[0].Release()
	held[0] = <-got
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err = p.Acquire(short)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	for _, l := range held {
		l.Release()
	}

	s = p.Stat()
	assert.EqualValues(t, before.EmptyAcquireCount()+2, s.EmptyAcquireCount(), "the waiter and the one that gave up")
	assert.Greater(t, s.EmptyAcquireWaitTime(), before.EmptyAcquireWaitTime())
	assert.Equal(t, s.EmptyAcquireWaitTime(), s.AcquireDuration())
	assert.EqualValues(t, before.CanceledAcquireCount()+1, s.CanceledAcquireCount())
	assert.EqualValues(t, before.AcquireCount()+1, s.AcquireCount())
	assert.EqualValues(t, 2, s.NewConnsCount())
	assert.Zero(t, s.ConstructingConns())
	assert.Zero(t, s.RetryCount())
	assert.Zero(t, s.ForcedCloseCount())
	assert.EqualValues(t, p.Stats().MaxSize, s.MaxConns())
}

// Connections closed for their lifetime and for their idle time are
// counted apart, as pgxpool counts them.
func TestStatCountsLifetimeAndIdleCloses(t *testing.T) {
	for _, c := range []struct {
		name           string
		lifetime, idle time.Duration
	}{{"Lifetime", 100 * time.Millisecond, time.Hour}, {"Idle", time.Minute, 100 * time.Millisecond}} {
		t.Run(c.name, func(t *testing.T) {
			cfg := poolConfig(t, uniqueName(t))
			cfg.Pool.MaxLifetime, cfg.Pool.MaxIdleTime = c.lifetime, c.idle
			p := openConfig(t, cfg)
			require.NoError(t, p.Ping(ctxFor(t, 10*time.Second)))
			// A close is counted once Manager.Close has returned.
			eventually(t, 10*time.Second, func() (bool, string) {
				s := p.Stats()
				return s.Live == 0 && s.Closed == 1, fmt.Sprintf("%d connections, %d closed", s.Live, s.Closed)
			})
			s := p.Stat()
			if c.name == "Lifetime" {
				assert.EqualValues(t, 1, s.MaxLifetimeDestroyCount())
				assert.Zero(t, s.MaxIdleDestroyCount())
			} else {
				assert.EqualValues(t, 1, s.MaxIdleDestroyCount())
				assert.Zero(t, s.MaxLifetimeDestroyCount())
			}
			assert.EqualValues(t, 1, s.NewConnsCount())
		})
	}
}

// AcquireFunc runs f with a connection and returns its error; the
// connection is back afterwards.
func TestAcquireFunc(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 1})
	ctx := ctxFor(t, 10*time.Second)
	var n int
	require.NoError(t, p.AcquireFunc(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT 7").Scan(&n)
	}))
	assert.Equal(t, 7, n)
	boom := errors.New("some error")
	require.ErrorIs(t, p.AcquireFunc(ctx, func(*pgx.Conn) error { return boom }), boom)
	requireNoneLeased(t, p, "AcquireFunc")
	require.NoError(t, p.Close(ctx))
	require.ErrorIs(t, p.AcquireFunc(ctx, func(*pgx.Conn) error { return nil }), pool.ErrClosed)
}

// Reset closes idle connections now and leased ones when released; the
// pool stays open.
func TestResetClosesEveryConnection(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 4})
	ctx := ctxFor(t, 10*time.Second)
	var held []pool.Lease[*pgx.Conn]
	for range 3 {
		l, err := p.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, l)
	}
	p.Reset()
	for _, l := range held {
		l.Release()
	}
	eventually(t, 10*time.Second, func() (bool, string) {
		return p.Stat().TotalConns() == 0, fmt.Sprintf("%d connections", p.Stat().TotalConns())
	})
	require.NoError(t, p.Ping(ctx), "the pool is open")
	waitClosed(t, p, pool.CloseReset, 3)
}

// NewPool gives the facade to a pool of any Manager: here one made of
// functions, which neither checks nor refuses anything.
func TestNewPoolTakesAnyManager(t *testing.T) {
	cc := config(t, uniqueName(t)).ConnConfig
	var connects int
	m := manager.Funcs[*pgx.Conn]{
		ConnectFunc: func(ctx context.Context) (*pgx.Conn, error) { connects++; return pgx.ConnectConfig(ctx, cc) },
		CloseFunc:   func(c *pgx.Conn) error { return c.Close(context.Background()) },
	}
	pp, err := pool.New[*pgx.Conn](m, pool.Config{MaxSize: 1})
	require.NoError(t, err)
	p := pgxmanager.NewPool(pp, pgxmanager.Options{})
	ctx := ctxFor(t, 10*time.Second)
	defer func() { require.NoError(t, p.Close(ctx)) }()
	assert.Same(t, pp, p.Pool())

	testPoolMethods(t, ctx, p)
	assert.Equal(t, 1, connects)
	assert.Nil(t, p.Config().ConnConfig, "NewPool knows only its Options")
	assert.Zero(t, p.Stat().ForcedCloseCount())
	assert.Panics(t, func() { pgxmanager.NewPool(nil, pgxmanager.Options{}) })
}

// testPoolMethods runs each query method once on p.
func testPoolMethods(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
	t.Helper()
	tag, err := p.Exec(ctx, "SET TIME ZONE 'UTC'")
	require.NoError(t, err)
	assert.Equal(t, "SET", tag.String())
	rows, err := p.Query(ctx, "SELECT generate_series(1, $1::int)", 10)
	require.NoError(t, err)
	ns, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(t, err)
	assert.Len(t, ns, 10)
	var what, who string
	require.NoError(t, p.QueryRow(ctx, "SELECT 'hello', $1::text", "world").Scan(&what, &who))
	assert.Equal(t, "hello world", what+" "+who)
	b := &pgx.Batch{}
	b.Queue("SELECT 1")
	b.Queue("SELECT 2")
	br := p.SendBatch(ctx, b)
	var n int32
	require.NoError(t, br.QueryRow().Scan(&n))
	assert.EqualValues(t, 1, n)
	require.NoError(t, br.QueryRow().Scan(&n))
	assert.EqualValues(t, 2, n)
	require.NoError(t, br.Close())
	require.NoError(t, pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "CREATE TEMP TABLE pgxm_methods (n int4) ON COMMIT DROP")
		if err != nil {
			return err
		}
		c, err := tx.CopyFrom(ctx, pgx.Identifier{"pgxm_methods"}, []string{"n"}, pgx.CopyFromRows([][]any{{1}, {2}}))
		if err == nil && c != 2 {
			err = fmt.Errorf("copied %d rows", c)
		}
		return err
	}))
	require.NoError(t, p.Ping(ctx))
	requireNoneLeased(t, p, "the query methods")
}
