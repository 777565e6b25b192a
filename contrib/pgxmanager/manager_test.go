package pgxmanager_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/manager"
)

func TestNewNamesTheBadField(t *testing.T) {
	cc, err := pgx.ParseConfig("postgres://u@127.0.0.1:1/db")
	require.NoError(t, err)
	for field, cfg := range map[string]pgxmanager.Config{
		"ConnConfig":     {},
		"PingTimeout":    {ConnConfig: cc, PingTimeout: -1},
		"CloseTimeout":   {ConnConfig: cc, CloseTimeout: -1},
		"CleanupTimeout": {ConnConfig: cc, CleanupTimeout: -1},
	} {
		_, err := pgxmanager.New(cfg)
		require.ErrorIs(t, err, pgxmanager.ErrInvalidConfig, field)
		assert.Contains(t, err.Error(), "Config."+field)
	}
	withPoolParam, err := pgx.ParseConfig("postgres://u@127.0.0.1:1/db?pool_max_conns=4")
	require.NoError(t, err)
	_, err = pgxmanager.New(pgxmanager.Config{ConnConfig: withPoolParam})
	require.ErrorIs(t, err, pgxmanager.ErrInvalidConfig, "pgx.ParseConfig leaves pool_max_conns to be sent to the server")
	assert.Contains(t, err.Error(), "pool_max_conns")
	_, err = pgxmanager.New(pgxmanager.Config{ConnConfig: cc, PingAfter: -1})
	require.NoError(t, err, "a negative PingAfter means never")
	_, err = pgxmanager.ParsePoolConfig("postgres://u@h:notaport/db")
	require.ErrorIs(t, err, pgxmanager.ErrInvalidConfig)
}

// connect opens one connection with m, closed at the end of the test.
func connect(t *testing.T, m *pgxmanager.Manager) *pgx.Conn {
	t.Helper()
	c, err := m.Connect(ctxFor(t, 10*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(c) })
	return c
}

func TestConnectRunsAfterConnect(t *testing.T) {
	cfg := config(t, uniqueName(t))
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET search_path TO pg_catalog")
		return err
	}
	c := connect(t, newManager(t, cfg))
	var path string
	require.NoError(t, c.QueryRow(ctxFor(t, 5*time.Second), "SHOW search_path").Scan(&path))
	assert.Equal(t, "pg_catalog", path)
}

func TestConnectClosesTheConnectionWhenAfterConnectFails(t *testing.T) {
	a := dialAdmin(t)
	name := uniqueName(t)
	cfg := config(t, name)
	boom := errors.New("boom")
	var seen *pgx.Conn
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		seen = c
		return boom
	}
	c, err := newManager(t, cfg).Connect(ctxFor(t, 10*time.Second))
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "AfterConnect")
	assert.Nil(t, c)
	require.NotNil(t, seen)
	assert.True(t, seen.IsClosed())
	eventually(t, 5*time.Second, func() (bool, string) {
		n, _ := a.backends(name)
		return n == 0, "the refused connection's backend is still there"
	})
}

func TestCheckReleaseRefusesClosedBusyAndInTransaction(t *testing.T) {
	m := newManager(t, config(t, uniqueName(t)))
	ctx := ctxFor(t, 10*time.Second)

	idle := connect(t, m)
	require.NoError(t, m.CheckRelease(idle))

	inTx := connect(t, m)
	_, err := inTx.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	require.ErrorIs(t, m.CheckRelease(inTx), pgxmanager.ErrNotReusable)

	failedTx := connect(t, m)
	_, err = failedTx.Exec(ctx, "BEGIN")
	require.NoError(t, err)
	_, err = failedTx.Exec(ctx, "SELECT 1/0")
	require.Error(t, err)
	require.ErrorIs(t, m.CheckRelease(failedTx), pgxmanager.ErrNotReusable, "a failed transaction not rolled back")

	busy := connect(t, m)
	rows, err := busy.Query(ctx, "SELECT generate_series(1, 3)")
	require.NoError(t, err)
	require.ErrorIs(t, m.CheckRelease(busy), pgxmanager.ErrNotReusable, "rows not read to the end")
	rows.Close()
	require.NoError(t, m.CheckRelease(busy), "the rows closed, the connection is idle again")

	closed := connect(t, m)
	require.NoError(t, m.Close(closed))
	require.ErrorIs(t, m.CheckRelease(closed), pgxmanager.ErrNotReusable)

	for _, c := range []*pgx.Conn{inTx, failedTx, closed} {
		require.ErrorIs(t, m.Recycle(ctx, c, manager.Metrics{LastUsed: time.Now()}), pgxmanager.ErrNotReusable,
			"Recycle runs CheckRelease's checks first")
	}
}

func TestRecyclePingsOnlyAfterPingAfter(t *testing.T) {
	cfg := config(t, uniqueName(t))
	conns := dialFaulty(cfg)
	cfg.PingAfter = time.Minute
	m := newManager(t, cfg)
	c := connect(t, m)
	fc := <-conns
	ctx := ctxFor(t, 10*time.Second)

	before := fc.writes.Load()
	require.NoError(t, m.Recycle(ctx, c, manager.Metrics{LastUsed: time.Now()}))
	assert.Equal(t, before, fc.writes.Load(), "recently used: no round trip")
	require.NoError(t, m.Recycle(ctx, c, manager.Metrics{LastUsed: time.Now().Add(-2 * time.Minute)}))
	assert.Equal(t, before+1, fc.writes.Load(), "idle past PingAfter: one ping")

	cfg.PingAfter = -1
	never := newManager(t, cfg)
	c2 := connect(t, never)
	fc2 := <-conns
	before = fc2.writes.Load()
	require.NoError(t, never.Recycle(ctx, c2, manager.Metrics{LastUsed: time.Now().Add(-time.Hour)}))
	assert.Equal(t, before, fc2.writes.Load(), "PingAfter < 0: never a ping")
}

func TestRecyclePingIsBoundedByPingTimeout(t *testing.T) {
	cfg := config(t, uniqueName(t))
	conns := dialFaulty(cfg)
	cfg.PingTimeout = 50 * time.Millisecond
	cfg.CloseTimeout = 50 * time.Millisecond // the broken connection's cleanup waits for no reply
	m := newManager(t, cfg)
	c := connect(t, m)
	fc := <-conns

	fc.swallow.Store(true) // the ping never reaches the server: no reply comes
	done := make(chan error, 1)
	go func() {
		done <- m.Recycle(context.Background(), c, manager.Metrics{LastUsed: time.Now().Add(-time.Hour)})
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, pgxmanager.ErrNotReusable)
		require.NotErrorIs(t, err, context.Canceled, "the acquirer's context did not end")
	case <-time.After(30 * time.Second):
		t.Fatal("Recycle's ping was not bounded by PingTimeout")
	}
}

func TestRecycleRejectsABackendTerminatedWhileIdle(t *testing.T) {
	a := dialAdmin(t)
	name := uniqueName(t)
	cfg := config(t, name)
	cfg.PingAfter = time.Hour // the peek alone must find it
	m := newManager(t, cfg)
	c := connect(t, m)
	ctx := ctxFor(t, 10*time.Second)
	met := manager.Metrics{LastUsed: time.Now()}
	require.NoError(t, m.Recycle(ctx, c, met))

	require.Equal(t, 1, a.terminate(name))
	// pg_terminate_backend's FATAL message and the close reach the client
	// socket asynchronously: poll.
	eventually(t, 5*time.Second, func() (bool, string) {
		return m.Recycle(ctx, c, met) != nil, "Recycle still passes a terminated backend"
	})
	require.ErrorIs(t, m.Recycle(ctx, c, met), pgxmanager.ErrNotReusable)
}

// pgconn starts a background reader when a write is slow (15 ms) and stops
// it only after its next read returns: on an idle connection it may stay
// parked in a read that holds the socket's read lock, where a plain peek
// would wait for ever. Recycle must return, and leave the connection usable.
func TestRecycleDoesNotWaitForPgconnsBackgroundReader(t *testing.T) {
	cfg := config(t, uniqueName(t))
	conns := dialFaulty(cfg)
	cfg.PingAfter = time.Hour // no ping by age: only the reader makes Recycle ping
	m := newManager(t, cfg)
	c := connect(t, m)
	fc := <-conns
	ctx := ctxFor(t, 20*time.Second)
	ended, cancel := context.WithCancel(context.Background())
	cancel()

	// A write that takes 100 ms after its bytes went out: the reply comes
	// while it sleeps, pgconn's reader (started at 15 ms) reads it and parks
	// in the next read; the write's end then only asks the reader to stop.
	fc.slowWrite.Store(int64(100 * time.Millisecond))
	parked := false
	for range 10 {
		_, err := c.Exec(ctx, "SELECT 1")
		require.NoError(t, err)
		if c.PgConn().SyncConn(ended) != nil {
			parked = true
			break
		}
	}
	fc.slowWrite.Store(0)
	require.True(t, parked, "could not leave pgconn's background reader parked on the socket")

	done := make(chan error, 1)
	go func() { done <- m.Recycle(ctx, c, manager.Metrics{LastUsed: time.Now()}) }()
	select {
	case err := <-done:
		require.NoError(t, err, "a healthy connection")
	case <-time.After(15 * time.Second):
		t.Fatal("Recycle waited on pgconn's background reader")
	}
	require.NoError(t, c.PgConn().SyncConn(ended), "the reader has stopped, nothing is buffered")
	var one int
	require.NoError(t, c.QueryRow(ctx, "SELECT 1").Scan(&one))
	require.Equal(t, 1, one)
}

func TestCloseIsBoundedByCloseTimeout(t *testing.T) {
	cfg := config(t, uniqueName(t))
	conns := dialFaulty(cfg)
	cfg.CloseTimeout = 50 * time.Millisecond
	m := newManager(t, cfg)
	c, err := m.Connect(ctxFor(t, 10*time.Second))
	require.NoError(t, err)
	fc := <-conns

	fc.stall.Store(true) // the goodbye cannot be written
	done := make(chan error, 1)
	go func() { done <- m.Close(c) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close was not bounded by CloseTimeout")
	}
	require.True(t, c.IsClosed())
}
