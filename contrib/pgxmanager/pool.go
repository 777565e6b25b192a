package pgxmanager

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/poolkit/poolkit/pool"
)

// Pool runs queries on a pool.Pool[*pgx.Conn], acquiring a connection for
// each call and releasing it when the call is done with it: at once for
// Exec, CopyFrom and Ping; when the rows are closed (or read to their end)
// for Query; when the row is scanned for QueryRow; when the results are
// closed for SendBatch; at Commit or Rollback for Begin. A call that does not
// release (rows never closed, a Tx never ended) holds its connection, as with
// pgxpool. It is safe for concurrent use; the Rows, Row, BatchResults and Tx
// it returns are not.
//
// A connection is released, never destroyed, by these methods: the
// [Manager]'s CheckRelease closes one left closed, busy or in a transaction.
type Pool struct {
	p *pool.Pool[*pgx.Conn]
}

// NewPool returns a [Pool] over a [pool.Pool] of connections made by m. cfg is
// the pool's configuration; [pool.New]'s error (naming a bad field) is
// returned.
func NewPool(m *Manager, cfg pool.Config) (*Pool, error) {
	p, err := pool.New[*pgx.Conn](m, cfg)
	if err != nil {
		return nil, err
	}
	return &Pool{p: p}, nil
}

// Open parses connString (see [ParseConfig]) and returns a [Pool] of its
// connections with the [Manager]'s defaults and the pool configuration cfg.
// It does not connect: the first query does (or the pool's maintainer, with
// cfg.MinIdle set).
func Open(connString string, cfg pool.Config) (*Pool, error) {
	mc, err := ParseConfig(connString)
	if err != nil {
		return nil, err
	}
	m, err := New(mc)
	if err != nil {
		return nil, err
	}
	return NewPool(m, cfg)
}

// Pool returns the underlying pool, for Acquire, Stats, SetMaxSize, Reset.
func (p *Pool) Pool() *pool.Pool[*pgx.Conn] { return p.p }

// Acquire returns a lease on a connection (see [pool.Pool.Acquire]). Release
// it when done; it must not be used afterwards.
func (p *Pool) Acquire(ctx context.Context) (pool.Lease[*pgx.Conn], error) {
	return p.p.Acquire(ctx)
}

// Stats returns the pool's statistics.
func (p *Pool) Stats() pool.Stats { return p.p.Stats() }

// Close closes the pool (see [pool.Pool.Close]): it returns once every
// connection is closed, leased ones included once they are released, or
// ctx's error.
func (p *Pool) Close(ctx context.Context) error { return p.p.Close(ctx) }

// Exec acquires a connection, runs pgx.Conn.Exec on it and releases it.
func (p *Pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	l, err := p.p.Acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer l.Release()
	return l.Value().Exec(ctx, sql, args...)
}

// Query acquires a connection and runs pgx.Conn.Query on it. The connection
// is released when the rows are closed, or when Next returns false; close
// them (rows.Close, or pgx.CollectRows and the like, which do). On an error
// the connection is already released and the returned Rows carry the error.
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	l, err := p.p.Acquire(ctx)
	if err != nil {
		return errRows{err: err}, err
	}
	r, err := l.Value().Query(ctx, sql, args...)
	if err != nil {
		l.Release()
		return errRows{err: err}, err
	}
	return &rows{Rows: r, l: l, held: true}, nil
}

// QueryRow acquires a connection and runs pgx.Conn.QueryRow on it. The
// connection is released by the row's Scan, which must be called. An
// Acquire error is returned by Scan.
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	l, err := p.p.Acquire(ctx)
	if err != nil {
		return errRow{err: err}
	}
	return &row{r: l.Value().QueryRow(ctx, sql, args...), l: l, held: true}
}

// SendBatch acquires a connection and sends b on it (pgx.Conn.SendBatch).
// The connection is released when the results are closed, which must
// happen; or, if b began a transaction (pgx.Batch.BeginTx), when that
// transaction (the results' Tx) ends with Commit or Rollback. An Acquire
// error is returned as pgx.FailedBatchResults does.
func (p *Pool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	l, err := p.p.Acquire(ctx)
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	br := l.Value().SendBatch(ctx, b)
	if t := br.Tx(); t != nil {
		return &batchResults{BatchResults: br, tx: &tx{Tx: t, l: l, held: true}}
	}
	return &batchResults{BatchResults: br, l: l, held: true}
}

// Begin acquires a connection and starts a transaction on it. The
// connection is released when the transaction ends with Commit or Rollback
// (defer tx.Rollback(ctx): it is a no-op after Commit). On an error the
// connection is already released.
func (p *Pool) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx is Begin with options (isolation level, access and deferrable
// modes).
func (p *Pool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	l, err := p.p.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	t, err := l.Value().BeginTx(ctx, opts)
	if err != nil {
		l.Release()
		return nil, err
	}
	return &tx{Tx: t, l: l, held: true}, nil
}

// CopyFrom acquires a connection, runs pgx.Conn.CopyFrom on it and releases
// it.
func (p *Pool) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	l, err := p.p.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer l.Release()
	return l.Value().CopyFrom(ctx, table, columns, src)
}

// Ping acquires a connection, pings the server on it and releases it.
func (p *Pool) Ping(ctx context.Context) error {
	l, err := p.p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer l.Release()
	return l.Value().Ping(ctx)
}
