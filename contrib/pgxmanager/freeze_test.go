package pgxmanager_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// A server that stops answering (SIGSTOP) cannot complete a close: pgconn's
// clean-up of a connection whose query was cut short (a cancel request,
// then reading what the server still sends) would wait 15 s, and the
// server cannot let go of the connection. Manager.Close waits for it
// within CloseTimeout only (after CleanupTimeout, if set), then closes the
// socket and counts a forced close, so the slots are free again while the
// server is still frozen.
func TestCloseAgainstAFrozenServerEndsTheSocket(t *testing.T) {
	pg := startPostgres(t)
	for _, cleanup := range []time.Duration{0, 100 * time.Millisecond} {
		t.Run(fmt.Sprintf("CleanupTimeout=%v", cleanup), func(t *testing.T) {
			closeAgainstAFrozenServer(t, pg, cleanup)
		})
	}
}

func closeAgainstAFrozenServer(t *testing.T, pg *privatePostgres, cleanup time.Duration) {
	cfg := &pgxmanager.PoolConfig{Config: configFor(t, pg.dsn, uniqueName(t))}
	cfg.CleanupTimeout = cleanup
	cfg.Pool.MaxSize = 4
	p := openConfig(t, cfg)
	ctx := ctxFor(t, 30*time.Second)
	var held []pool.Lease[*pgx.Conn]
	for range 4 {
		l, err := p.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, l)
	}

	pg.signal(syscall.SIGSTOP)
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			pg.signal(syscall.SIGCONT)
		}
	}
	defer thaw()
	var wg sync.WaitGroup
	for _, l := range held {
		wg.Go(func() {
			qctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			_, err := l.Value().Exec(qctx, "SELECT 1")
			assert.Error(t, err, "the frozen server answered")
			l.Release() // closed by pgconn: refused, then closed by the Manager
		})
	}
	wg.Wait()
	eventually(t, 10*time.Second, func() (bool, string) {
		s := p.Stats()
		return s.Closing == 0 && s.Live == 0, fmt.Sprintf("%d connections still closing", s.Closing)
	})
	assert.EqualValues(t, 4, p.Stat().ForcedCloseCount(), "each close had to end its socket itself")
	thaw()
	require.NoError(t, p.Ping(ctx), "the server answers again")
}

// freezeContender is a pool whose recovery from a frozen server the
// benchmark measures: query runs one SELECT 1 under ctx.
type freezeContender struct {
	name  string
	query func(ctx context.Context) error
	// fill holds n connections at once under ctx and releases them, so that
	// the freeze finds the pool full, as a steady workload keeps it.
	fill  func(ctx context.Context, n int) error
	close func()
	// lastOK is the time of the workload's last successful query, Unix ns.
	lastOK atomic.Int64
}

// run runs the workload, workers goroutines each querying under timeout,
// until the returned function is called.
func (c *freezeContender) run(workers int, timeout time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				if c.query(ctx) == nil {
					c.lastOK.Store(time.Now().UnixNano())
				}
				cancel()
			}
		})
	}
	return func() {
		close(done)
		wg.Wait()
	}
}

// BenchmarkFrozenServerRecovery freezes a private PostgreSQL (SIGSTOP of
// every process of the server) for 1 s under a workload of 16 goroutines,
// each running SELECT 1 under a 200 ms timeout on a pool of 8, then thaws
// it, and reports how long after the thaw the first query succeeded (the
// median over b.N freezes per contender, and the ratio of poolkit's to
// database/sql's). The contenders, in the same run, each in freezes of its
// own (in one freeze the server's backlog on thawing, which each
// contender's cancel requests and connects fill, would be shared), each
// freeze preceded by a fill of the contender's pool (MaxSize connections
// held at once), so that no connect is in flight when the server freezes:
// a connect dialled before the freeze is first in the postmaster's queue,
// and on this loaded machine database/sql, which connects on demand under
// the query's 200 ms deadline, often still had one pending after the
// 300 ms warm-up.
// pgxmanager's facade with the given CleanupTimeout, and database/sql over
// pgx's stdlib driver. The sub-benchmarks are the default CleanupTimeout
// (0: no wait for pgconn's clean-up), 250 ms, and 5 s (as Close waited
// before).
//
//	go test -run '^$' -bench FrozenServerRecovery -benchtime 10x ./contrib/pgxmanager
func BenchmarkFrozenServerRecovery(b *testing.B) {
	pg := startPostgres(b)
	for _, cleanup := range []time.Duration{0, 250 * time.Millisecond, 5 * time.Second} {
		b.Run(fmt.Sprintf("CleanupTimeout=%v", cleanup), func(b *testing.B) {
			frozenServerRecovery(b, pg, cleanup)
		})
	}
}

func frozenServerRecovery(b *testing.B, pg *privatePostgres, cleanup time.Duration) {
	const maxSize, workers = 8, 16
	const queryTimeout, freeze = 200 * time.Millisecond, time.Second
	cc, err := pgx.ParseConfig(pg.dsn)
	require.NoError(b, err)
	pc, err := pgxmanager.ParsePoolConfig(pg.dsn)
	require.NoError(b, err)
	pc.Pool.MaxSize = maxSize
	pc.CleanupTimeout = cleanup
	fp, err := pgxmanager.OpenConfig(pc)
	require.NoError(b, err)
	db := stdlib.OpenDB(*cc)
	db.SetMaxOpenConns(maxSize)
	db.SetMaxIdleConns(maxSize)
	contenders := []*freezeContender{
		{name: "poolkit", query: func(ctx context.Context) error {
			_, err := fp.Exec(ctx, "SELECT 1")
			return err
		}, fill: func(ctx context.Context, n int) error {
			return holdAtOnce(n, func() (func(), error) {
				l, err := fp.Acquire(ctx)
				return l.Release, err
			})
		}, close: func() { _ = fp.Close(context.Background()) }},
		{name: "database/sql", query: func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, "SELECT 1")
			return err
		}, fill: func(ctx context.Context, n int) error {
			return holdAtOnce(n, func() (func(), error) {
				c, err := db.Conn(ctx)
				if err != nil {
					return nil, err
				}
				return func() { _ = c.Close() }, nil
			})
		}, close: func() { _ = db.Close() }},
	}
	defer func() {
		for _, c := range contenders {
			c.close()
		}
	}()

	recovery := make(map[string][]time.Duration)
	forced := fp.Stat().ForcedCloseCount()
	b.ResetTimer()
	for range b.N {
		for _, c := range contenders {
			fctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			require.NoError(b, c.fill(fctx, maxSize), "%s: filling the pool", c.name)
			cancel()
			stop := c.run(workers, queryTimeout)
			time.Sleep(300 * time.Millisecond) // the workload runs on a healthy server
			pg.signal(syscall.SIGSTOP)
			time.Sleep(freeze)
			thawed := pg.signal(syscall.SIGCONT)
			for deadline := thawed.Add(30 * time.Second); c.lastOK.Load() < thawed.UnixNano(); {
				if time.Now().After(deadline) {
					b.Fatalf("%s: no query succeeded within 30 s of the thaw", c.name)
				}
				time.Sleep(time.Millisecond)
			}
			recovery[c.name] = append(recovery[c.name], time.Duration(c.lastOK.Load()-thawed.UnixNano()))
			time.Sleep(300 * time.Millisecond) // the workload runs on the thawed server
			stop()
			time.Sleep(500 * time.Millisecond) // the server works off its backlog
		}
	}
	b.StopTimer()
	median := func(ds []time.Duration) time.Duration {
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	pk, std := median(recovery["poolkit"]), median(recovery["database/sql"])
	b.ReportMetric(float64(pk)/float64(time.Millisecond), "poolkit-ms")
	b.ReportMetric(float64(std)/float64(time.Millisecond), "database/sql-ms")
	b.ReportMetric(float64(pk)/float64(std), "poolkit/database-sql")
	b.ReportMetric(float64(fp.Stat().ForcedCloseCount()-forced)/float64(b.N), "forced-closes/op")
	b.Logf("first success after the thaw: poolkit %v, database/sql %v", recovery["poolkit"], recovery["database/sql"])
}

// holdAtOnce takes n connections with take, all held at the same time,
// then releases them.
func holdAtOnce(n int, take func() (release func(), err error)) error {
	releases := make([]func(), n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { releases[i], errs[i] = take() })
	}
	wg.Wait()
	for i, r := range releases {
		if errs[i] == nil {
			r()
		}
	}
	return errors.Join(errs...)
}

// BenchmarkCleanupAfterACutQuery measures pgconn's clean-up of a
// connection whose query its context cut short, against a server that
// answers (the shared one): the cancel request, then reading what the
// server still sends, until CleanupDone. ns/op is that time: what Close
// would wait for with a CleanupTimeout above it.
//
//	go test -run '^$' -bench CleanupAfterACutQuery -benchtime 30x ./contrib/pgxmanager
func BenchmarkCleanupAfterACutQuery(b *testing.B) {
	cc, err := pgx.ParseConfig(dsn(b))
	require.NoError(b, err)
	for range b.N {
		b.StopTimer()
		c, err := pgx.ConnectConfig(context.Background(), cc)
		require.NoError(b, err)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		_, err = c.Exec(ctx, "SELECT pg_sleep(10)")
		cancel()
		require.Error(b, err)
		require.True(b, c.IsClosed(), "pgconn closes a connection whose query was cut short")
		b.StartTimer()
		<-c.PgConn().CleanupDone()
	}
}
