package pgxmanager_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// openConfig opens a Pool of cfg, closed at the end of the test.
func openConfig(t *testing.T, cfg *pgxmanager.PoolConfig) *pgxmanager.Pool {
	t.Helper()
	p, err := pgxmanager.OpenConfig(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, p.Close(ctx))
	})
	return p
}

// waitClosed waits until n connections of p have been closed for reason r
// (a close is counted once Manager.Close returns, on a goroutine of the
// pool's).
func waitClosed(t *testing.T, p *pgxmanager.Pool, r pool.CloseReason, n int) {
	t.Helper()
	eventually(t, 10*time.Second, func() (bool, string) {
		got := p.Stats().ClosedBy[r]
		return got == uint64(n), fmt.Sprintf("%d closed for %v, want %d", got, r, n)
	})
}

// poolConfig is the test server's PoolConfig with the connections named
// name.
func poolConfig(t *testing.T, name string) *pgxmanager.PoolConfig {
	t.Helper()
	return &pgxmanager.PoolConfig{Config: config(t, name)}
}

// BeforeConnect changes the copy of ConnConfig that one connect uses; the
// Pool's ConnConfig is left as it was.
func TestBeforeConnectEditsACopyForOneConnect(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	var calls atomic.Int32
	cfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		calls.Add(1)
		cc.RuntimeParams["application_name"] = "rotated"
		return nil
	}
	p := openConfig(t, cfg)
	var name string
	require.NoError(t, p.QueryRow(ctxFor(t, 10*time.Second), "SHOW application_name").Scan(&name))
	assert.Equal(t, "rotated", name)
	assert.EqualValues(t, 1, calls.Load())
	assert.NotEqual(t, "rotated", p.Config().ConnConfig.RuntimeParams["application_name"])
}

// A BeforeConnect error fails the connect, and the Acquire that waited for
// it gets the error; a panic becomes such an error.
func TestBeforeConnectErrorAndPanicFailTheConnect(t *testing.T) {
	boom := errors.New("no token")
	for name, hook := range map[string]func(context.Context, *pgx.ConnConfig) error{
		"error": func(context.Context, *pgx.ConnConfig) error { return boom },
		"panic": func(context.Context, *pgx.ConnConfig) error { panic("token service down") },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := poolConfig(t, uniqueName(t))
			cfg.BeforeConnect = hook
			p := openConfig(t, cfg)
			_, err := p.Exec(ctxFor(t, 10*time.Second), "SELECT 1")
			require.Error(t, err)
			assert.Contains(t, err.Error(), "BeforeConnect")
			if name == "error" {
				assert.ErrorIs(t, err, boom)
			} else {
				assert.Contains(t, err.Error(), "token service down")
			}
			assert.Zero(t, p.Stat().TotalConns())
		})
	}
}

// AfterConnect prepares a statement on each new connection; queries use it
// by name.
func TestAfterConnectPreparesStatements(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Prepare(ctx, "answer", "SELECT 42")
		return err
	}
	p := openConfig(t, cfg)
	var n int
	require.NoError(t, p.QueryRow(ctxFor(t, 10*time.Second), "answer").Scan(&n))
	assert.Equal(t, 42, n)
}

// A panic in AfterConnect fails the connect with an error and closes the
// connection; it does not end the process from the pool's goroutine.
func TestAfterConnectPanicFailsTheConnect(t *testing.T) {
	a := dialAdmin(t)
	name := uniqueName(t)
	cfg := poolConfig(t, name)
	cfg.AfterConnect = func(context.Context, *pgx.Conn) error { panic("setup boom") }
	p := openConfig(t, cfg)
	_, err := p.Exec(ctxFor(t, 10*time.Second), "SELECT 1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AfterConnect panicked: setup boom")
	eventually(t, 5*time.Second, func() (bool, string) {
		n, _ := a.backends(name)
		return n == 0, "the connection AfterConnect panicked on is still open"
	})
}

// PrepareConn's four answers, as pgxpool gives them: (true, nil) uses the
// connection; (false, nil) destroys it and takes another; (true, err) gives
// it back and fails the Acquire; (false, err) destroys it and fails the
// Acquire.
func TestPrepareConnAnswers(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	cfg.Pool.MaxSize = 8
	var attempts int
	cfg.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) {
		attempts++ // Acquires run one at a time here
		var err error
		if attempts%3 == 0 {
			err = errors.New("PrepareConn error")
		}
		return attempts%2 == 0, err
	}
	p := openConfig(t, cfg)
	ctx := ctxFor(t, 20*time.Second)
	var held []pool.Lease[*pgx.Conn]
	failed := 0
	for len(held) < 4 {
		l, err := p.Acquire(ctx)
		if err != nil {
			require.EqualError(t, err, "PrepareConn error")
			failed++
			continue
		}
		held = append(held, l)
	}
	// Attempts 1..10: 2, 4, 8, 10 succeed; 3 and 9 fail destroying, 6 fails
	// giving the connection back; 1, 5 and 7 are retried.
	assert.Equal(t, 3, failed)
	assert.Equal(t, 10, attempts)
	for _, l := range held {
		l.Release()
	}
	// The connection attempt 6 gave back went to attempt 7, and was
	// destroyed there.
	waitClosed(t, p, pool.CloseDestroy, 5)
	assert.Equal(t, 4, p.Stats().Idle)
}

// The deprecated BeforeAcquire: false destroys the connection and takes
// another; PrepareConn wins when both are set.
func TestBeforeAcquire(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	cfg.Pool.MaxSize = 8
	var attempts int
	cfg.BeforeAcquire = func(context.Context, *pgx.Conn) bool {
		attempts++
		return attempts%2 == 0
	}
	p := openConfig(t, cfg)
	ctx := ctxFor(t, 20*time.Second)
	var held []pool.Lease[*pgx.Conn]
	for range 4 {
		l, err := p.Acquire(ctx)
		require.NoError(t, err)
		held = append(held, l)
	}
	for _, l := range held {
		l.Release()
	}
	assert.Equal(t, 8, attempts)

	cfg.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) { return true, nil }
	attempts = 0
	p = openConfig(t, cfg)
	require.NoError(t, p.Ping(ctx))
	assert.Zero(t, attempts, "BeforeAcquire ran although PrepareConn is set")
}

// A PrepareConn that refuses every connection fails the Acquire after
// MaxSize+1 attempts instead of looping; one that panics destroys the
// connection and the panic goes on.
func TestPrepareConnRefusingOrPanicking(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	cfg.Pool.MaxSize = 2
	var attempts int
	cfg.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) { attempts++; return false, nil }
	p := openConfig(t, cfg)
	_, err := p.Acquire(ctxFor(t, 20*time.Second))
	require.ErrorContains(t, err, "too many failed attempts")
	assert.Equal(t, 3, attempts)

	cfg.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) { panic("prepare boom") }
	p = openConfig(t, cfg)
	require.PanicsWithValue(t, "prepare boom", func() { _ = p.Ping(ctxFor(t, 10*time.Second)) })
	eventually(t, 5*time.Second, func() (bool, string) {
		s := p.Stats()
		return s.ClosedBy[pool.CloseDestroy] == 1 && s.Live == 0, "the connection PrepareConn panicked on was not destroyed"
	})
}

// AfterRelease decides on each release whether the connection is kept:
// keeping one release in two over ten uses makes five connections.
func TestAfterReleaseDecidesOnEachRelease(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	var releases int
	cfg.AfterRelease = func(*pgx.Conn) bool {
		releases++
		return releases%2 == 1
	}
	p := openConfig(t, cfg)
	ctx := ctxFor(t, 20*time.Second)
	seen := map[*pgx.Conn]bool{}
	for range 10 {
		l, err := p.Acquire(ctx)
		require.NoError(t, err)
		seen[l.Value()] = true
		l.Release()
	}
	assert.Len(t, seen, 5)
	assert.Equal(t, 10, releases)
	waitClosed(t, p, pool.CloseReleaseCheck, 5)
}

// AfterRelease is not asked about a connection released in a state that
// already refuses it (inside a transaction).
func TestAfterReleaseSkipsConnectionsAlreadyRefused(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	var asked atomic.Int32
	cfg.AfterRelease = func(*pgx.Conn) bool { asked.Add(1); return true }
	p := openConfig(t, cfg)
	_, err := p.Exec(ctxFor(t, 10*time.Second), "BEGIN")
	require.NoError(t, err)
	assert.Zero(t, asked.Load())
	waitClosed(t, p, pool.CloseReleaseCheck, 1)
}

// AfterRelease is not asked about a connection released past its lifetime,
// which is closed without it, as pgxpool closes one. The pool's clock has
// passed the first connection's lifetime once the maintainer has closed
// the second, connected later, for its own.
func TestAfterReleaseSkipsExpiredConnections(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	cfg.Pool.MaxSize, cfg.Pool.MaxLifetime = 2, 250*time.Millisecond
	var asked atomic.Int32
	cfg.AfterRelease = func(*pgx.Conn) bool { asked.Add(1); return true }
	p := openConfig(t, cfg)
	ctx := ctxFor(t, 10*time.Second)
	first, err := p.Acquire(ctx)
	require.NoError(t, err)
	second, err := p.Acquire(ctx)
	require.NoError(t, err)
	second.Release()
	require.EqualValues(t, 1, asked.Load(), "a connection within its lifetime is asked about")
	waitClosed(t, p, pool.CloseLifetime, 1) // the second, idle
	first.Release()
	waitClosed(t, p, pool.CloseLifetime, 2)
	assert.EqualValues(t, 1, asked.Load(), "AfterRelease was asked about an expired connection")
}

// BeforeClose sees every connection before it is closed, here closed by
// Reset; a panic in it is recovered and the connection is closed anyway.
func TestBeforeCloseSeesEachClosedConnection(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	closing := make(chan uint32, 5)
	cfg.BeforeClose = func(c *pgx.Conn) { closing <- c.PgConn().PID() }
	p := openConfig(t, cfg)
	ctx := ctxFor(t, 20*time.Second)
	var acquired, closed []uint32
	for range 5 {
		l, err := p.Acquire(ctx)
		require.NoError(t, err)
		acquired = append(acquired, l.Value().PgConn().PID())
		l.Release()
		p.Reset()
		closed = append(closed, <-closing)
	}
	assert.ElementsMatch(t, acquired, closed)

	m := newManager(t, pgxmanager.Config{ConnConfig: config(t, uniqueName(t)).ConnConfig,
		BeforeClose: func(*pgx.Conn) { panic("close boom") }})
	c, err := m.Connect(ctx)
	require.NoError(t, err)
	err = m.Close(c)
	require.ErrorContains(t, err, "BeforeClose panicked: close boom")
	assert.True(t, c.IsClosed())
}

// ShouldPing is asked on each reuse, with the connection and how long it
// was idle (never less than the true idle time); false means no round
// trip.
func TestShouldPingIsAskedWithTheIdleTime(t *testing.T) {
	cfg := poolConfig(t, uniqueName(t))
	conns := dialFaulty(cfg.Config)
	var last *pgxmanager.ShouldPingParams
	cfg.ShouldPing = func(_ context.Context, sp pgxmanager.ShouldPingParams) bool {
		last = &sp
		return false
	}
	p := openConfig(t, cfg)
	ctx := ctxFor(t, 20*time.Second)
	l, err := p.Acquire(ctx)
	require.NoError(t, err)
	fc := <-conns
	l.Release()
	const idle = 200 * time.Millisecond
	time.Sleep(idle)
	writes := fc.writes.Load()
	l, err = p.Acquire(ctx)
	require.NoError(t, err)
	defer l.Release()
	require.NotNil(t, last)
	assert.Same(t, l.Value(), last.Conn)
	assert.GreaterOrEqual(t, last.IdleDuration, idle)
	assert.Equal(t, writes, fc.writes.Load(), "ShouldPing said no: no ping")
}

// A Manager with no hooks set pays nothing for them: its checks of a
// healthy connection do not allocate.
func TestUnsetHooksCostNoAllocation(t *testing.T) {
	m := newManager(t, config(t, uniqueName(t)))
	c := connect(t, m)
	ctx := ctxFor(t, 10*time.Second)
	met := manager.Metrics{LastUsed: time.Now().Add(time.Hour)} // never idle long enough to ping
	require.NoError(t, m.Recycle(ctx, c, met))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = m.Recycle(ctx, c, met) }), "Recycle")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = m.CheckRelease(c) }), "CheckRelease")
}
