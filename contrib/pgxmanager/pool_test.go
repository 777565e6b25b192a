package pgxmanager_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// openPool returns a Pool of MaxSize maxSize over connections named name,
// closed at the end of the test.
func openPool(t *testing.T, name string, pc pool.Config) *pgxmanager.Pool {
	t.Helper()
	pp, err := pool.New[*pgx.Conn](newManager(t, config(t, name)), pc)
	require.NoError(t, err)
	p := pgxmanager.NewPool(pp, pgxmanager.Options{})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, p.Close(ctx))
	})
	return p
}

// requireNoneLeased fails the test unless every connection of p is back.
func requireNoneLeased(t *testing.T, p *pgxmanager.Pool, after string) {
	t.Helper()
	require.Zero(t, p.Stats().Leased, "a connection still leased after %s", after)
}

// Each call acquires a connection and gives it back when it is done with it:
// on a pool of one connection, a call that kept it would make the next one
// wait until its context ends.
func TestPoolMethodsReleaseTheirConnection(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 1, AcquireTimeout: 5 * time.Second})
	ctx := ctxFor(t, 30*time.Second)

	_, err := p.Exec(ctx, "CREATE TEMP TABLE t (n int)") // one connection: the table stays visible
	require.NoError(t, err)
	requireNoneLeased(t, p, "Exec")
	_, err = p.Exec(ctx, "SELECT nonsense")
	require.Error(t, err)
	requireNoneLeased(t, p, "a failed Exec")

	n, err := p.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"n"}, pgx.CopyFromRows([][]any{{1}, {2}, {3}}))
	require.NoError(t, err)
	require.EqualValues(t, 3, n)
	requireNoneLeased(t, p, "CopyFrom")

	rows, err := p.Query(ctx, "SELECT n FROM t ORDER BY n")
	require.NoError(t, err)
	got, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3}, got)
	requireNoneLeased(t, p, "Query with its rows collected")

	rows, err = p.Query(ctx, "SELECT n FROM t ORDER BY n")
	require.NoError(t, err)
	for rows.Next() { // read to the end, never closed by hand
	}
	require.NoError(t, rows.Err())
	requireNoneLeased(t, p, "Query with its rows read to the end")

	rows, err = p.Query(ctx, "SELECT n FROM t ORDER BY n")
	require.NoError(t, err)
	require.True(t, rows.Next())
	rows.Close() // closed early
	rows.Close() // twice is harmless
	requireNoneLeased(t, p, "Query with its rows closed early")

	_, err = p.Query(ctx, "SELECT nonsense")
	require.Error(t, err)
	requireNoneLeased(t, p, "a failed Query")

	var sum int
	require.NoError(t, p.QueryRow(ctx, "SELECT sum(n) FROM t").Scan(&sum))
	require.Equal(t, 6, sum)
	requireNoneLeased(t, p, "QueryRow")
	require.ErrorIs(t, p.QueryRow(ctx, "SELECT n FROM t WHERE n > 3").Scan(&sum), pgx.ErrNoRows)
	requireNoneLeased(t, p, "QueryRow with no row")

	b := &pgx.Batch{}
	b.Queue("INSERT INTO t VALUES (4)")
	b.Queue("SELECT count(*) FROM t").QueryRow(func(r pgx.Row) error { return r.Scan(&sum) })
	require.NoError(t, p.SendBatch(ctx, b).Close())
	require.Equal(t, 4, sum)
	requireNoneLeased(t, p, "SendBatch")

	tx, err := p.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO t VALUES (5)")
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.ErrorIs(t, tx.Rollback(ctx), pgx.ErrTxClosed, "deferred Rollback after Commit")
	requireNoneLeased(t, p, "Begin and Commit")

	tx, err = p.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "INSERT INTO t VALUES (6)")
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	requireNoneLeased(t, p, "BeginTx and Rollback")

	b = &pgx.Batch{}
	b.BeginTx(pgx.TxOptions{})
	b.Queue("INSERT INTO t VALUES (7)")
	br := p.SendBatch(ctx, b)
	require.NoError(t, br.Close())
	require.Equal(t, 1, p.Stats().Leased, "a batch that began a transaction keeps its connection for the Tx")
	require.NoError(t, br.Tx().Commit(ctx))
	requireNoneLeased(t, p, "a batch's transaction committed")

	require.NoError(t, p.Ping(ctx))
	requireNoneLeased(t, p, "Ping")

	require.NoError(t, p.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&sum))
	require.Equal(t, 6, sum, "1..5 and 7; 6 was rolled back")
	require.Zero(t, p.Stats().Closed, "every connection was released fit for reuse")
}

func TestPoolMethodsReturnAcquireErrors(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 1})
	ctx := ctxFor(t, 10*time.Second)
	require.NoError(t, p.Close(ctx))

	_, err := p.Exec(ctx, "SELECT 1")
	require.ErrorIs(t, err, pool.ErrClosed)
	rows, err := p.Query(ctx, "SELECT 1")
	require.ErrorIs(t, err, pool.ErrClosed)
	require.False(t, rows.Next())
	require.ErrorIs(t, rows.Err(), pool.ErrClosed)
	rows.Close()
	var n int
	require.ErrorIs(t, p.QueryRow(ctx, "SELECT 1").Scan(&n), pool.ErrClosed)
	require.ErrorIs(t, p.SendBatch(ctx, &pgx.Batch{}).Close(), pool.ErrClosed)
	_, err = p.Begin(ctx)
	require.ErrorIs(t, err, pool.ErrClosed)
	_, err = p.CopyFrom(ctx, pgx.Identifier{"t"}, []string{"n"}, pgx.CopyFromRows(nil))
	require.ErrorIs(t, err, pool.ErrClosed)
	require.ErrorIs(t, p.Ping(ctx), pool.ErrClosed)
	_, err = p.Acquire(ctx)
	require.ErrorIs(t, err, pool.ErrClosed)
}

func TestOpenParsesTheConnectionString(t *testing.T) {
	p, err := pgxmanager.Open(dsn(t), pool.Config{MaxSize: 2})
	require.NoError(t, err)
	defer p.Close(context.Background())
	var one int
	require.NoError(t, p.QueryRow(ctxFor(t, 10*time.Second), "SELECT 1").Scan(&one))
	assert.Equal(t, 1, one)
	assert.Equal(t, 2, p.Pool().Stats().MaxSize)

	_, err = pgxmanager.Open("postgres://u@h:notaport/db", pool.Config{MaxSize: 2})
	require.Error(t, err)
	p0, err := pgxmanager.Open(dsn(t), pool.Config{})
	require.NoError(t, err, "a zero pool.Config means pgxpool's defaults")
	defer p0.Close(context.Background())
	assert.Equal(t, pgxmanager.DefaultMaxSize(), p0.Stats().MaxSize)
}

// Types whose Value the facade's CopyFrom calls in place of pgx's encoder.
type (
	// copyInt's Value is on the type: a nil *copyInt is NULL without a call.
	copyInt int
	// copyText's Value is on the pointer: pgx calls it on a nil *copyText.
	copyText struct{ s string }
	// copyErr's Value fails.
	copyErr struct{}
)

var errCopyValue = errors.New("copy value refused")

func (v copyInt) Value() (driver.Value, error) { return int64(v) * 10, nil }

func (v *copyText) Value() (driver.Value, error) {
	if v == nil {
		return "nil pointer", nil
	}
	return v.s, nil
}

func (copyErr) Value() (driver.Value, error) { return nil, errCopyValue }

// The facade's CopyFrom evaluates its rows' driver.Valuers itself (so that
// their panics are caught): what it copies is what pgx's own CopyFrom
// copies from the same rows, pgx's own types go to their codecs, and the
// caller's rows are left as they were. A Value error fails the copy as it
// fails pgx's (CopyFail, with its message) and releases the connection.
func TestCopyFromCopiesValuersAsPgxDoes(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 1})
	ctx := ctxFor(t, 30*time.Second)
	_, err := p.Exec(ctx, "CREATE TEMP TABLE copied (src text, i int4, t text, num numeric)")
	require.NoError(t, err)
	rows := func(src string) [][]any {
		return [][]any{
			{src, copyInt(4), &copyText{"text"}, pgtype.Numeric{Int: big.NewInt(12345), Exp: -2, Valid: true}},
			{src, (*copyInt)(nil), (*copyText)(nil), pgtype.Numeric{}},
			{src, pgtype.Int4{Int32: 7, Valid: true}, "plain", 1.5},
			{src, 8, pgtype.Text{String: "pgtype", Valid: true}, nil},
		}
	}
	cols := []string{"src", "i", "t", "num"}
	facade := rows("facade")
	before := rows("facade")
	n, err := p.CopyFrom(ctx, pgx.Identifier{"copied"}, cols, pgx.CopyFromRows(facade))
	require.NoError(t, err)
	require.EqualValues(t, 4, n)
	assert.Equal(t, before, facade, "the caller's rows were written")
	require.NoError(t, p.AcquireFunc(ctx, func(c *pgx.Conn) error {
		_, err := c.CopyFrom(ctx, pgx.Identifier{"copied"}, cols, pgx.CopyFromRows(rows("pgx")))
		return err
	}))

	read := func(src string) []string {
		r, err := p.Query(ctx, "SELECT concat_ws('|', coalesce(i::text, 'NULL'), coalesce(t, 'NULL'), coalesce(num::text, 'NULL')) FROM copied WHERE src = $1 ORDER BY ctid", src)
		require.NoError(t, err)
		got, err := pgx.CollectRows(r, pgx.RowTo[string])
		require.NoError(t, err)
		return got
	}
	want := []string{"40|text|123.45", "NULL|nil pointer|NULL", "7|plain|1.5", "8|pgtype|NULL"}
	assert.Equal(t, want, read("pgx"), "pgx's own CopyFrom")
	assert.Equal(t, want, read("facade"))

	failing := [][]any{{"err", 1, "x", copyErr{}}}
	require.NoError(t, p.AcquireFunc(ctx, func(c *pgx.Conn) error {
		_, err := c.CopyFrom(ctx, pgx.Identifier{"copied"}, cols, pgx.CopyFromRows(failing))
		assert.ErrorContains(t, err, errCopyValue.Error(), "pgx's own CopyFrom: the server's answer to CopyFail, with the message")
		return nil
	}))
	_, err = p.CopyFrom(ctx, pgx.Identifier{"copied"}, cols, pgx.CopyFromRows(failing))
	require.ErrorContains(t, err, errCopyValue.Error())
	requireNoneLeased(t, p, "a failed Value")
	assert.Zero(t, p.Stats().Closed, "a Value error costs no connection")
	assert.Equal(t, want, read("facade"), "the failed copy copied nothing")
}
