// Package pgclient pools PostgreSQL connections with poolkit: a
// manager.Manager[*pgconn.PgConn] over pgx's low-level connection (Manager),
// and a small DB that runs queries on pooled connections and retries a query
// once when its connection breaks under it.
//
// It is an example: text-format parameters and results only, no
// transactions spanning calls, no prepared-statement cache.
package pgclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// DefaultPingAfter is Manager.PingAfter's default.
const DefaultPingAfter = time.Second

// closeTimeout bounds the polite close (a Terminate message) of a connection.
const closeTimeout = 5 * time.Second

// ErrNotReusable is matched by every error Recycle and CheckRelease return
// for a connection that must not be handed out again.
var ErrNotReusable = errors.New("pgclient: connection not reusable")

// ParseConfig parses a connection string (URL or key=value) and, if
// applicationName is not empty, sets application_name, which names the
// connections in pg_stat_activity.
func ParseConfig(dsn, applicationName string) (*pgconn.Config, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if applicationName != "" {
		cfg.RuntimeParams["application_name"] = applicationName
	}
	return cfg, nil
}

// Manager is a manager.Manager[*pgconn.PgConn]: Connect opens a connection
// with Config, Recycle checks it before each reuse, Close terminates it. It
// also implements pool.ReleaseChecker: a connection released busy, closed or
// inside a transaction is closed instead of pooled. Its fields are read,
// never written, by the methods. It is safe for concurrent use.
type Manager struct {
	// Config is what pgconn.ConnectConfig takes; it must come from
	// ParseConfig (this package's or pgconn's). Each Connect uses a copy.
	// Required.
	Config *pgconn.Config
	// PingAfter: Recycle pings a connection idle at least this long (an
	// empty query: one round trip). 0: DefaultPingAfter; negative: never.
	PingAfter time.Duration
}

var (
	_ manager.Manager[*pgconn.PgConn]     = Manager{}
	_ pool.ReleaseChecker[*pgconn.PgConn] = Manager{}
)

// Connect opens a connection under ctx (which bounds the whole start-up:
// dial, TLS, authentication). It returns pgconn's error, which wraps the dial
// error (errors.As finds a *net.OpError) when the server cannot be reached.
func (m Manager) Connect(ctx context.Context) (*pgconn.PgConn, error) {
	if m.Config == nil {
		return nil, errors.New("pgclient: Manager.Config is nil")
	}
	return pgconn.ConnectConfig(ctx, m.Config.Copy())
}

// Recycle reports whether c may be handed out again. It fails (matching
// ErrNotReusable) if c is closed, busy or not idle outside a transaction;
// then, without a round trip, if a non-blocking peek at its socket finds the
// server closed it or sent something unasked (pg_terminate_backend sends a
// FATAL error, then closes); last, a connection idle for at least PingAfter
// (by met.LastUsed, recorded by the pool on a coarse clock, so "idle" may be
// overestimated by up to the pool's tick) must answer a ping under ctx.
func (m Manager) Recycle(ctx context.Context, c *pgconn.PgConn, met manager.Metrics) error {
	if err := m.CheckRelease(c); err != nil {
		return err
	}
	if err := peek(ctx, c.Conn(), met); err != nil {
		return fmt.Errorf("%w: %w", ErrNotReusable, err)
	}
	after := m.PingAfter
	if after == 0 {
		after = DefaultPingAfter
	}
	if after > 0 && time.Since(met.LastUsed) >= after {
		if err := c.Ping(ctx); err != nil {
			return fmt.Errorf("%w: ping: %w", ErrNotReusable, err)
		}
	}
	return nil
}

// peekWait bounds how long Recycle's peek waits for the socket's read lock
// (see peek).
const peekWait = 20 * time.Millisecond

// peek runs manager.Dialer's non-blocking liveness check on the socket under
// c.
//
// pgconn may leave a background reader parked in Read on an idle connection:
// it starts one when a write is slow (15 ms), and that reader stops only after
// its next read returns. The parked read holds the socket's read lock, so a
// plain peek would wait for it — for ever on an idle connection (seen as a
// hung E2E benchmark on a loaded machine). So the peek runs under a short read
// deadline: if a parked read holds the lock, the deadline wakes it (pgconn's
// reader stops on a timeout and buffers nothing), the peek fails with the
// deadline, and the second try finds the lock free. The deadline is cleared
// afterwards, as pgconn leaves it between operations.
func peek(ctx context.Context, nc net.Conn, met manager.Metrics) error {
	defer func() { _ = nc.SetReadDeadline(time.Time{}) }()
	var err error
	for range 2 {
		if err = nc.SetReadDeadline(time.Now().Add(peekWait)); err != nil {
			return err
		}
		err = (manager.Dialer{}).Recycle(ctx, nc, met)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
	}
	return err
}

// CheckRelease rejects a connection that is closed, busy (a result not read
// to the end) or not idle outside a transaction.
func (Manager) CheckRelease(c *pgconn.PgConn) error {
	switch {
	case c.IsClosed():
		return fmt.Errorf("%w: closed", ErrNotReusable)
	case c.IsBusy():
		return fmt.Errorf("%w: busy", ErrNotReusable)
	case c.TxStatus() != 'I':
		return fmt.Errorf("%w: transaction status %q", ErrNotReusable, c.TxStatus())
	}
	return nil
}

// Close terminates c politely (a Terminate message), within a few seconds.
func (Manager) Close(c *pgconn.PgConn) error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return c.Close(ctx)
}

// DB runs queries on a pool of connections. It is safe for concurrent use.
//
// A query whose connection breaks under it (pg_terminate_backend, a server
// restart, a reset) is retried once, on another connection: the broken one
// is destroyed and the retry acquires again. A retry is at-least-once: a
// statement the server ran before the connection broke runs twice, so retry
// only what is idempotent (the SELECTs here). A query is not retried when
// its context has ended, on an SQL error (the connection is fine), or when
// Acquire fails.
type DB struct {
	pool    *pool.Pool[*pgconn.PgConn]
	retries atomic.Uint64
}

// Open returns a DB over a pool of connections made by m. cfg is the pool's
// configuration; New's error (naming a bad field) is returned.
func Open(m Manager, cfg pool.Config) (*DB, error) {
	p, err := pool.New[*pgconn.PgConn](m, cfg)
	if err != nil {
		return nil, err
	}
	return &DB{pool: p}, nil
}

// Query runs sql with args as text parameters ($1, $2, ...) and returns every
// row, each column as text (nil for NULL), with one retry on a broken
// connection (see DB).
func (db *DB) Query(ctx context.Context, sql string, args ...string) ([][][]byte, error) {
	rows, broken, err := db.try(ctx, sql, args)
	if broken && ctx.Err() == nil {
		db.retries.Add(1)
		rows, _, err = db.try(ctx, sql, args)
	}
	return rows, err
}

// try runs one query on one pooled connection, and destroys the connection
// if it broke.
func (db *DB) try(ctx context.Context, sql string, args []string) (rows [][][]byte, broken bool, err error) {
	l, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, false, err
	}
	c := l.Value()
	params := make([][]byte, len(args))
	for i, a := range args {
		params[i] = []byte(a)
	}
	res := c.ExecParams(ctx, sql, params, nil, nil, nil).Read()
	if res.Err != nil && c.IsClosed() {
		l.Destroy()
		return nil, true, res.Err
	}
	l.Release() // CheckRelease closes it if it is not idle
	return res.Rows, false, res.Err
}

// Retries returns how many queries were retried after their connection
// broke.
func (db *DB) Retries() uint64 { return db.retries.Load() }

// Stats returns the pool's statistics.
func (db *DB) Stats() pool.Stats { return db.pool.Stats() }

// Close closes the pool (see pool.Pool.Close): it returns once every
// connection is closed, or ctx's error.
func (db *DB) Close(ctx context.Context) error { return db.pool.Close(ctx) }
