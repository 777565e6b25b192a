package pgxmanager

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/poolkit/poolkit/pool"
)

// The types below hand a pooled connection's results to the caller and
// release the connection once the results are done with. None is safe for
// concurrent use (neither are pgx's); each releases its lease at most once,
// guarded by held.

// rows releases its connection when closed, or when Next returns false
// (pgx closes the rows then). The other methods are pgx's.
type rows struct {
	pgx.Rows
	l    pool.Lease[*pgx.Conn]
	held bool
}

func (r *rows) Close() {
	r.Rows.Close()
	if r.held {
		r.held = false
		r.l.Release()
	}
}

func (r *rows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

// row releases its connection in its first Scan, even if Scan panics (a
// Scanner of the caller's may). A second Scan gets pgx's answer for rows
// already read.
type row struct {
	r    pgx.Row
	l    pool.Lease[*pgx.Conn]
	held bool
}

func (r *row) Scan(dest ...any) error {
	if r.held {
		r.held = false
		defer r.l.Release()
	}
	return r.r.Scan(dest...)
}

// tx releases its connection when Commit or Rollback of the outer
// transaction returns, whatever the outcome: a connection still inside the
// transaction (a failed Commit) is closed by the Manager's CheckRelease.
type tx struct {
	pgx.Tx
	l    pool.Lease[*pgx.Conn]
	held bool
}

func (t *tx) release() {
	if t.held {
		t.held = false
		t.l.Release()
	}
}

func (t *tx) Commit(ctx context.Context) error {
	err := t.Tx.Commit(ctx)
	t.release()
	return err
}

func (t *tx) Rollback(ctx context.Context) error {
	err := t.Tx.Rollback(ctx)
	t.release()
	return err
}

// batchResults releases its connection when closed, unless the batch began
// a transaction (pgx.Batch.BeginTx): then the transaction holds the
// connection, and its Commit or Rollback releases it. The other methods are
// pgx's.
type batchResults struct {
	pgx.BatchResults
	tx   *tx // nil unless the batch began a transaction
	l    pool.Lease[*pgx.Conn]
	held bool
}

func (b *batchResults) Close() error {
	err := b.BatchResults.Close()
	if b.held {
		b.held = false
		b.l.Release()
	}
	return err
}

func (b *batchResults) Tx() pgx.Tx {
	if b.tx == nil {
		return nil
	}
	return b.tx
}

// errRows carries an error that came before any connection was held.
type errRows struct{ err error }

func (errRows) Close()                                       {}
func (e errRows) Err() error                                 { return e.err }
func (errRows) CommandTag() pgconn.CommandTag                { return pgconn.CommandTag{} }
func (errRows) FieldDescriptions() []pgconn.FieldDescription { return nil }
func (errRows) Next() bool                                   { return false }
func (e errRows) Scan(...any) error                          { return e.err }
func (e errRows) Values() ([]any, error)                     { return nil, e.err }
func (errRows) RawValues() [][]byte                          { return nil }
func (errRows) Conn() *pgx.Conn                              { return nil }
func (errRows) TypeMap() *pgtype.Map                         { return nil }

// errRow carries an Acquire error to Scan.
type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }
