package pgxmanager

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/poolkit/poolkit/pool"
)

// The types below hand a pooled connection's results to the caller and
// give the connection back once the results are done with. None is safe for
// concurrent use (neither are pgx's). Each ends its lease once: released
// when the results are done, destroyed when a call on them panicked; after
// that it never touches the connection again (another holder may have it,
// or the pool may be closing it).

// ErrPanicked is the error of Rows, a Row or BatchResults whose connection
// was destroyed because a call on it panicked (the panic itself went on to
// the caller of that call).
var ErrPanicked = errors.New("pgxmanager: connection destroyed after a panic")

// lease is a leased connection held by a result until it is given back.
type lease struct {
	l    pool.Lease[*pgx.Conn]
	held bool
}

func (h *lease) release() {
	if h.held {
		h.held = false
		h.l.Release()
	}
}

func (h *lease) destroy() {
	if h.held {
		h.held = false
		h.l.Destroy()
	}
}

// rows releases its connection when closed, when Next returns false, or when
// Scan or Values fails (pgx closes the rows then), and retries its query
// once when the first Next fails as Pool.Query would retry. The other
// methods are pgx's.
type rows struct {
	pgx.Rows
	h    lease
	dead bool  // destroyed after a panic: err is ErrPanicked, Rows is not touched
	err  error // set by a failed retry, or ErrPanicked
	// The query, for a retry at the first Next.
	p     *Pool
	ctx   context.Context
	sql   string
	args  []any
	fresh bool // no row returned yet and no retry made
}

func (r *rows) Close() {
	if r.dead {
		return
	}
	r.Rows.Close()
	r.h.release()
}

func (r *rows) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.Rows.Err()
}

func (r *rows) Next() bool {
	if r.dead {
		return false
	}
	if r.Rows.Next() {
		r.fresh = false
		return true
	}
	if r.fresh {
		r.fresh = false
		if r.h.held && r.p.retryable(r.ctx, r.Rows.Err(), 0) && r.again() {
			return r.Next()
		}
	}
	r.h.release()
	return false
}

// again destroys the connection and runs the query again on another; it
// reports whether it did (else err says why not).
func (r *rows) again() bool {
	r.h.destroy()
	r.p.retries.Add(1)
	l, err := r.p.Acquire(r.ctx)
	if err != nil {
		r.err = err
		return false
	}
	nr, err := queryOn(r.ctx, l, r.sql, r.args)
	if err != nil {
		l.Release()
		r.err = err
		return false
	}
	r.Rows, r.h = nr, lease{l: l, held: true}
	return true
}

func (r *rows) Scan(dest ...any) error {
	if r.dead {
		return r.err
	}
	done := false
	defer r.destroyUnless(&done)
	err := r.Rows.Scan(dest...)
	done = true
	if err != nil {
		r.Close()
	}
	return err
}

func (r *rows) Values() ([]any, error) {
	if r.dead {
		return nil, r.err
	}
	done := false
	defer r.destroyUnless(&done)
	v, err := r.Rows.Values()
	done = true
	if err != nil {
		r.Close()
	}
	return v, err
}

func (r *rows) RawValues() [][]byte {
	if r.dead {
		return nil
	}
	return r.Rows.RawValues()
}

func (r *rows) destroyUnless(done *bool) {
	if !*done {
		r.dead, r.err = true, ErrPanicked
		r.h.destroy()
	}
}

// row releases its connection in its first Scan, or destroys it if Scan
// panics (a Scanner of the caller's may), and retries its query once when
// the Scan fails as Pool.QueryRow would retry. A second Scan gets pgx's
// answer for rows already read.
type row struct {
	r    pgx.Row
	h    lease
	dead bool
	// The query, for a retry.
	p    *Pool
	ctx  context.Context
	sql  string
	args []any
	try  int
}

func (r *row) Scan(dest ...any) error {
	if r.dead {
		return ErrPanicked
	}
	if !r.h.held {
		return r.r.Scan(dest...)
	}
	done := false
	defer func() {
		if !done {
			r.dead = true
			r.h.destroy()
		}
	}()
	err := r.r.Scan(dest...)
	done = true
	if r.p.retryable(r.ctx, err, r.try) {
		r.h.destroy()
		r.p.retries.Add(1)
		l, aerr := r.p.Acquire(r.ctx)
		if aerr != nil {
			return aerr
		}
		r.r, r.h, r.try = queryRowOn(r.ctx, l, r.sql, r.args), lease{l: l, held: true}, r.try+1
		return r.Scan(dest...)
	}
	r.h.release()
	return err
}

// tx releases its connection when Commit or Rollback of the outer
// transaction returns, whatever the outcome: a connection still inside the
// transaction (a failed Commit) is closed by the Manager's CheckRelease.
// Once its connection was destroyed (a panic in its batch's results, or
// one in its CopyFrom that the guard did not catch), every call returns
// pgx.ErrTxClosed and touches nothing. (pgx.Tx's Conn and LargeObjects are
// pgx's.)
type tx struct {
	pgx.Tx
	h    lease
	dead bool
}

func (t *tx) Commit(ctx context.Context) error {
	if t.dead {
		return pgx.ErrTxClosed
	}
	err := t.Tx.Commit(ctx)
	t.h.release()
	return err
}

func (t *tx) Rollback(ctx context.Context) error {
	if t.dead {
		return pgx.ErrTxClosed
	}
	err := t.Tx.Rollback(ctx)
	t.h.release()
	return err
}

// CopyFrom is pgx's, with src guarded as Pool.CopyFrom guards it: a panic
// the guard caught fails the copy, which fails the transaction, and goes on
// from here; the transaction is still the caller's to roll back. Any other
// panic destroys the connection.
func (t *tx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if t.dead {
		return 0, pgx.ErrTxClosed
	}
	g := &guardedSource{src: src}
	done := false
	defer func() {
		if !done {
			t.kill()
		}
	}()
	n, err := t.Tx.CopyFrom(ctx, table, columns, g)
	done = true
	g.rethrow()
	return n, err
}

func (t *tx) kill() {
	t.dead = true
	t.h.destroy()
}

// The other calls of a transaction whose connection was destroyed fail
// with pgx.ErrTxClosed and touch nothing.

func (t *tx) Begin(ctx context.Context) (pgx.Tx, error) {
	if t.dead {
		return nil, pgx.ErrTxClosed
	}
	return t.Tx.Begin(ctx)
}

func (t *tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.dead {
		return pgconn.CommandTag{}, pgx.ErrTxClosed
	}
	return t.Tx.Exec(ctx, sql, args...)
}

func (t *tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.dead {
		return errRows{err: pgx.ErrTxClosed}, pgx.ErrTxClosed
	}
	return t.Tx.Query(ctx, sql, args...)
}

func (t *tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.dead {
		return errRow{err: pgx.ErrTxClosed}
	}
	return t.Tx.QueryRow(ctx, sql, args...)
}

func (t *tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.dead {
		return pgx.FailedBatchResults(b, pgx.ErrTxClosed)
	}
	return t.Tx.SendBatch(ctx, b)
}

func (t *tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	if t.dead {
		return nil, pgx.ErrTxClosed
	}
	return t.Tx.Prepare(ctx, name, sql)
}

// batchResults releases its connection when closed, unless the batch began
// a transaction (pgx.Batch.BeginTx): then the transaction holds the
// connection, and its Commit or Rollback releases it. A panic in any of its
// calls (a queued query's callback, a Scanner of a row read from it)
// destroys the connection; the results then fail with ErrPanicked.
type batchResults struct {
	br   pgx.BatchResults
	own  lease // the connection, unless tx holds it
	tx   *tx   // the batch's transaction; nil unless it began one
	dead bool
}

var _ pgx.BatchResults = (*batchResults)(nil)

// kill destroys the connection after a panic.
func (b *batchResults) kill() {
	b.dead = true
	if b.tx != nil {
		b.tx.kill()
	} else {
		b.own.destroy()
	}
}

func (b *batchResults) killUnless(done *bool) {
	if !*done {
		b.kill()
	}
}

func (b *batchResults) Exec() (pgconn.CommandTag, error) {
	if b.dead {
		return pgconn.CommandTag{}, ErrPanicked
	}
	done := false
	defer b.killUnless(&done)
	tag, err := b.br.Exec()
	done = true
	return tag, err
}

func (b *batchResults) Query() (pgx.Rows, error) {
	if b.dead {
		return errRows{err: ErrPanicked}, ErrPanicked
	}
	done := false
	defer b.killUnless(&done)
	r, err := b.br.Query()
	done = true
	return &batchRows{Rows: r, b: b}, err
}

func (b *batchResults) QueryRow() pgx.Row {
	if b.dead {
		return errRow{err: ErrPanicked}
	}
	done := false
	defer b.killUnless(&done)
	r := b.br.QueryRow()
	done = true
	return &batchRow{r: r, b: b}
}

func (b *batchResults) Close() error {
	if b.dead {
		return ErrPanicked
	}
	done := false
	defer b.killUnless(&done)
	err := b.br.Close()
	done = true
	b.own.release()
	return err
}

func (b *batchResults) Tx() pgx.Tx {
	if b.tx == nil {
		return nil
	}
	return b.tx
}

// batchRow is a row read from a batch: a panic in its Scan destroys the
// batch's connection.
type batchRow struct {
	r pgx.Row
	b *batchResults
}

func (r *batchRow) Scan(dest ...any) error {
	if r.b.dead {
		return ErrPanicked
	}
	done := false
	defer r.b.killUnless(&done)
	err := r.r.Scan(dest...)
	done = true
	return err
}

// batchRows are rows read from a batch: a panic in Scan or Values destroys
// the batch's connection. Closing them does not release it (the batch
// holds it).
type batchRows struct {
	pgx.Rows
	b *batchResults
}

func (r *batchRows) Close() {
	if !r.b.dead {
		r.Rows.Close()
	}
}

func (r *batchRows) Err() error {
	if r.b.dead {
		return ErrPanicked
	}
	return r.Rows.Err()
}

func (r *batchRows) Next() bool { return !r.b.dead && r.Rows.Next() }

func (r *batchRows) Scan(dest ...any) error {
	if r.b.dead {
		return ErrPanicked
	}
	done := false
	defer r.b.killUnless(&done)
	err := r.Rows.Scan(dest...)
	done = true
	return err
}

func (r *batchRows) Values() ([]any, error) {
	if r.b.dead {
		return nil, ErrPanicked
	}
	done := false
	defer r.b.killUnless(&done)
	v, err := r.Rows.Values()
	done = true
	return v, err
}

func (r *batchRows) RawValues() [][]byte {
	if r.b.dead {
		return nil
	}
	return r.Rows.RawValues()
}

// errSourcePanicked is what a guardedSource reports to pgx once its source,
// or the Value of one of its rows' driver.Valuers, panicked.
var errSourcePanicked = errors.New("pgxmanager: the CopyFromSource panicked")

// guardedSource is the CopyFromSource that CopyFrom hands pgx in place of
// the caller's. pgx reads the source, and encodes the rows, on a goroutine
// of its own, where a panic would end the process: guardedSource recovers a
// panic of the source's Next, Values or Err, and of the Value method of
// each driver.Valuer among a row's values, which it calls itself (see
// evaluate). After one, Next returns true (so that pgx asks for the row)
// and Values and Err return errSourcePanicked: pgx ends the copy as for a
// source's error (CopyFail) and returns; the caller then panics with the
// value (rethrow), on its own goroutine.
//
// pgx calls it from one goroutine at a time, and waits for that goroutine
// before CopyFrom returns: its fields are then the caller's again.
type guardedSource struct {
	src      pgx.CopyFromSource
	panicked bool
	value    any
	row      []any // evaluate's copy of the last row, reused for the next
}

// rethrow panics with the value the source panicked with, if it did.
func (s *guardedSource) rethrow() {
	if s.panicked {
		panic(s.value)
	}
}

// catchMore and catchErr are deferred by the guarded methods: after a panic
// of the source, Next reports one more row and Values and Err the error.
func (s *guardedSource) catchMore(more *bool) {
	if r := recover(); r != nil {
		s.panicked, s.value = true, r
		*more = true
	}
}

func (s *guardedSource) catchErr(err *error) {
	if r := recover(); r != nil {
		s.panicked, s.value = true, r
		*err = errSourcePanicked
	}
}

func (s *guardedSource) Next() (more bool) {
	if s.panicked {
		return true
	}
	defer s.catchMore(&more)
	return s.src.Next()
}

func (s *guardedSource) Values() (v []any, err error) {
	if s.panicked {
		return nil, errSourcePanicked
	}
	defer s.catchErr(&err)
	v, err = s.src.Values()
	if err != nil {
		return v, err
	}
	return s.evaluate(v)
}

func (s *guardedSource) Err() (err error) {
	if s.panicked {
		return errSourcePanicked
	}
	defer s.catchErr(&err)
	return s.src.Err()
}

// evaluate returns row with each driver.Valuer whose Value pgx would call
// (see callsValue) replaced by what its Value returned, which pgx then
// encodes as it encodes a Valuer's value; a Value error fails the copy. So
// the Value methods run here, under the guard. row itself is not written
// (it may be the caller's, as with pgx.CopyFromRows): the values go in a
// slice of s's own, which pgx has done with when it asks for the next row.
func (s *guardedSource) evaluate(row []any) ([]any, error) {
	out, copied := row, false
	for i, v := range row {
		dv, ok := v.(driver.Valuer)
		if !ok || !callsValue(v) {
			continue
		}
		val, err := dv.Value()
		if err != nil {
			return nil, fmt.Errorf("pgxmanager: CopyFrom: the Value of column %d (%T): %w", i, v, err)
		}
		if !copied {
			s.row = append(s.row[:0], row...)
			out, copied = s.row, true
		}
		out[i] = val
	}
	return out, nil
}

// pgxModule prefixes the package path of pgx's own types.
const pgxModule = "github.com/jackc/pgx/v5/"

// callsValue reports whether pgx calls the Value method of v, a
// driver.Valuer, when it encodes v, as far as evaluate follows it: not for
// pgx's own types (pgtype's), which pgx encodes with their codecs and whose
// Value runs no caller's code; not for a nil pointer to a type whose Value
// is on the type itself, which pgx sends as NULL (database/sql's rule);
// else yes.
func callsValue(v any) bool {
	t := reflect.TypeOf(v)
	named := t
	if t.Kind() == reflect.Pointer {
		named = t.Elem()
		if reflect.ValueOf(v).IsNil() && named.Implements(valuerType) {
			return false
		}
	}
	return !strings.HasPrefix(named.PkgPath(), pgxModule)
}

var valuerType = reflect.TypeFor[driver.Valuer]()

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
