package pgxmanager_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// User code that panics where pgx calls it.
type (
	// panicValuer panics when pgx encodes it as an argument (database/sql's
	// interface).
	panicValuer struct{}
	// panicInt64 panics when pgx's int8 codec encodes it (pgtype's
	// interface).
	panicInt64 struct{}
	// panicScanner panics when pgx scans a value into it.
	panicScanner struct{}
	// nilPanicValuer's Value, on the pointer, panics when called on nil,
	// as pgx calls it (database/sql's rule).
	nilPanicValuer struct{}
)

func (v *nilPanicValuer) Value() (driver.Value, error) {
	if v == nil {
		panic("nil valuer boom")
	}
	return nil, nil
}

func (panicValuer) Value() (driver.Value, error)    { panic("valuer boom") }
func (panicInt64) Int64Value() (pgtype.Int8, error) { panic("codec boom") }
func (*panicScanner) Scan(any) error                { panic("scanner boom") }

// panicSource is a CopyFromSource of three rows of one int4 whose method
// named by at panics: Next at its fourth call, Values at a fourth row, Err
// when asked after the rows.
type panicSource struct {
	at string // "Next", "Values" or "Err"
	n  int    // Next calls so far
}

func (s *panicSource) Next() bool {
	s.n++
	switch s.at {
	case "Next":
		if s.n > 3 {
			panic("source Next boom")
		}
		return true
	case "Values":
		return s.n <= 4
	}
	return s.n <= 3
}

func (s *panicSource) Values() ([]any, error) {
	if s.at == "Values" && s.n == 4 {
		panic("source Values boom")
	}
	return []any{s.n}, nil
}

func (s *panicSource) Err() error {
	if s.at == "Err" {
		panic("source Err boom")
	}
	return nil
}

// requireUsable fails the test unless p, of MaxSize 1, has its connection
// back (released, or destroyed and replaceable) and answers a query.
func requireUsable(t *testing.T, p *pgxmanager.Pool, after string) {
	t.Helper()
	requireAnswers(t, p, p.Stats, after)
}

// requireAnswers fails the test unless db answers a query and, after it,
// stats counts no connection leased.
func requireAnswers(t *testing.T, db dbtx, stats func() pool.Stats, after string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	require.NoError(t, db.QueryRow(ctx, "SELECT 41 + 1").Scan(&n), "the pool is not usable after %s", after)
	require.Equal(t, 42, n)
	require.Zero(t, stats().Leased, "a connection still leased after %s", after)
}

// failure is one way a call on a pooled connection can go wrong; destroyed
// says whether the connection must be destroyed (a panic: its protocol
// state unknown) rather than released.
type failure struct {
	name      string
	destroyed bool
	run       func(t *testing.T, ctx context.Context, p *pgxmanager.Pool)
}

func failures() []failure {
	return []failure{
		// Errors.
		{"Exec/error", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			_, err := p.Exec(ctx, "SELECT nonsense")
			require.Error(t, err)
		}},
		{"Exec/argument error", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			_, err := p.Exec(ctx, "SELECT $1::int4", "not a number")
			require.Error(t, err)
		}},
		{"Query/error", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			_, err := p.Query(ctx, "SELECT nonsense")
			require.Error(t, err)
		}},
		{"Query/Scan error, rows not closed", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			rows, err := p.Query(ctx, "SELECT 'x' FROM generate_series(1, 100)")
			require.NoError(t, err)
			require.True(t, rows.Next())
			var n int
			require.Error(t, rows.Scan(&n), "text into an int")
			// The everyday loop returns here: no Close.
		}},
		{"Query/Values error, rows not closed", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			rows, err := p.Query(ctx, "SELECT 7::int4 FROM generate_series(1, 100)")
			require.NoError(t, err)
			require.True(t, rows.Next())
			_, err = rows.Values()
			require.ErrorIs(t, err, errDecode, "the failing int4 codec")
		}},
		{"Query/error mid-stream", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			rows, err := p.Query(ctx, "SELECT 10 / (5 - n) FROM generate_series(1, 10) n")
			require.NoError(t, err)
			for rows.Next() {
			}
			require.Error(t, rows.Err(), "division by zero")
		}},
		{"QueryRow/no rows", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			var n int
			require.ErrorIs(t, p.QueryRow(ctx, "SELECT 1 WHERE false").Scan(&n), pgx.ErrNoRows)
		}},
		{"QueryRow/Scan error", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			var n int
			require.Error(t, p.QueryRow(ctx, "SELECT 'x'").Scan(&n))
		}},
		{"SendBatch/error", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			b := &pgx.Batch{}
			b.Queue("SELECT 1")
			b.Queue("SELECT nonsense")
			b.Queue("SELECT 3")
			require.Error(t, p.SendBatch(ctx, b).Close())
		}},
		{"Begin/bad isolation level", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			tx, err := p.BeginTx(ctx, pgx.TxOptions{IsoLevel: "nonsense"})
			require.Error(t, err)
			require.Nil(t, tx)
		}},
		{"Begin/backend terminated by its BEGIN", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			_, err := p.BeginTx(ctx, pgx.TxOptions{BeginQuery: "SELECT pg_terminate_backend(pg_backend_pid())"})
			require.Error(t, err)
		}},
		{"Tx/failed, rolled back", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			tx, err := p.Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, "SELECT nonsense")
			require.Error(t, err)
			require.Error(t, tx.Commit(ctx), "the commit of a failed transaction")
		}},
		{"CopyFrom/error", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			_, err := p.CopyFrom(ctx, pgx.Identifier{"no_such_table"}, []string{"n"}, pgx.CopyFromRows([][]any{{1}}))
			require.Error(t, err)
		}},
		{"AcquireFunc/error", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			boom := errors.New("f failed")
			require.ErrorIs(t, p.AcquireFunc(ctx, func(*pgx.Conn) error { return boom }), boom)
		}},
		{"BeginFunc/error", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			boom := errors.New("body failed")
			require.ErrorIs(t, pgx.BeginFunc(ctx, p, func(pgx.Tx) error { return boom }), boom)
		}},

		// Panics in argument encoding.
		{"Exec/Valuer panic", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "valuer boom", func() { _, _ = p.Exec(ctx, "SELECT $1::text", panicValuer{}) })
		}},
		{"Exec/codec panic", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "codec boom", func() { _, _ = p.Exec(ctx, "SELECT $1::int8", panicInt64{}) })
		}},
		{"Exec/Valuer panic, simple protocol", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "valuer boom", func() {
				_, _ = p.Exec(ctx, "SELECT $1::text", pgx.QueryExecModeSimpleProtocol, panicValuer{})
			})
		}},
		{"Query/Valuer panic", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "valuer boom", func() { _, _ = p.Query(ctx, "SELECT $1::text", panicValuer{}) })
		}},
		{"QueryRow/codec panic", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			var n int
			require.PanicsWithValue(t, "codec boom", func() { _ = p.QueryRow(ctx, "SELECT $1::int8", panicInt64{}).Scan(&n) })
		}},
		{"SendBatch/Valuer panic", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			b := &pgx.Batch{}
			b.Queue("SELECT 1")
			b.Queue("SELECT $1::text", panicValuer{})
			require.PanicsWithValue(t, "valuer boom", func() { _ = p.SendBatch(ctx, b).Close() })
		}},

		// Panics in scanning.
		{"QueryRow/Scanner panic", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "scanner boom", func() { _ = p.QueryRow(ctx, "SELECT 1").Scan(&panicScanner{}) })
		}},
		{"QueryRow/typed nil destination", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			var s *string
			require.Panics(t, func() { _ = p.QueryRow(ctx, "SELECT 'hello'").Scan(s) })
		}},
		{"Query/Scanner panic", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			rows, err := p.Query(ctx, "SELECT n FROM generate_series(1, 100) n")
			require.NoError(t, err)
			require.True(t, rows.Next())
			require.PanicsWithValue(t, "scanner boom", func() { _ = rows.Scan(&panicScanner{}) })
			assert.False(t, rows.Next(), "rows whose connection was destroyed")
			assert.ErrorIs(t, rows.Err(), pgxmanager.ErrPanicked)
			rows.Close() // a deferred Close after the panic: harmless
		}},

		// Panics in batches.
		{"SendBatch/callback panic", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			b := &pgx.Batch{}
			b.Queue("SELECT 1").QueryRow(func(pgx.Row) error { panic("callback boom") })
			b.Queue("SELECT 2")
			br := p.SendBatch(ctx, b)
			require.PanicsWithValue(t, "callback boom", func() { _ = br.Close() })
			assert.ErrorIs(t, br.Close(), pgxmanager.ErrPanicked, "a deferred Close after the panic")
		}},
		{"SendBatch/row Scanner panic", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			b := &pgx.Batch{}
			b.Queue("SELECT 1")
			b.Queue("SELECT 2")
			br := p.SendBatch(ctx, b)
			require.PanicsWithValue(t, "scanner boom", func() { _ = br.QueryRow().Scan(&panicScanner{}) })
			assert.ErrorIs(t, br.Close(), pgxmanager.ErrPanicked)
		}},
		{"SendBatch/rows Scanner panic", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			b := &pgx.Batch{}
			b.Queue("SELECT generate_series(1, 3)")
			br := p.SendBatch(ctx, b)
			rows, err := br.Query()
			require.NoError(t, err)
			require.True(t, rows.Next())
			require.PanicsWithValue(t, "scanner boom", func() { _ = rows.Scan(&panicScanner{}) })
			rows.Close()
			assert.ErrorIs(t, br.Close(), pgxmanager.ErrPanicked)
		}},
		{"SendBatch/callback panic in a batch's transaction", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			b := &pgx.Batch{}
			b.BeginTx(pgx.TxOptions{})
			b.Queue("SELECT 1").QueryRow(func(pgx.Row) error { panic("callback boom") })
			br := p.SendBatch(ctx, b)
			tx := br.Tx()
			require.NotNil(t, tx)
			require.PanicsWithValue(t, "callback boom", func() { _ = br.Close() })
			_, err := tx.Exec(ctx, "SELECT 1")
			assert.ErrorIs(t, err, pgx.ErrTxClosed, "a call on a transaction whose connection was destroyed")
			assert.ErrorIs(t, tx.Rollback(ctx), pgx.ErrTxClosed, "the transaction's connection was destroyed")
		}},

		// Panics in CopyFrom's source and in the Value of its rows' driver.Valuers,
		// which pgx calls on a goroutine of its own: the facade catches them
		// there, pgx ends the copy as for an error, and the connection, in a
		// known state, is released before the panic goes on.
		{"CopyFrom/source Next panic", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "source Next boom", func() {
				_, _ = p.CopyFrom(ctx, pgx.Identifier{"pgxm_copy"}, []string{"n"}, &panicSource{at: "Next"})
			})
		}},
		{"CopyFrom/source Values panic", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "source Values boom", func() {
				_, _ = p.CopyFrom(ctx, pgx.Identifier{"pgxm_copy"}, []string{"n"}, &panicSource{at: "Values"})
			})
		}},
		{"CopyFrom/source Err panic", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "source Err boom", func() {
				_, _ = p.CopyFrom(ctx, pgx.Identifier{"pgxm_copy"}, []string{"n"}, &panicSource{at: "Err"})
			})
		}},
		{"CopyFrom/Valuer panic in a row", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "valuer boom", func() {
				_, _ = p.CopyFrom(ctx, pgx.Identifier{"pgxm_copy"}, []string{"n"}, pgx.CopyFromRows([][]any{{1}, {panicValuer{}}, {3}}))
			})
		}},
		{"CopyFrom/nil pointer Valuer panic in a row", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "nil valuer boom", func() {
				_, _ = p.CopyFrom(ctx, pgx.Identifier{"pgxm_copy"}, []string{"n"}, pgx.CopyFromRows([][]any{{(*nilPanicValuer)(nil)}}))
			})
		}},
		{"CopyFrom/source panic in a transaction", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			tx, err := p.Begin(ctx)
			require.NoError(t, err)
			require.PanicsWithValue(t, "source Values boom", func() {
				_, _ = tx.CopyFrom(ctx, pgx.Identifier{"pgxm_copy"}, []string{"n"}, &panicSource{at: "Values"})
			})
			assert.NoError(t, tx.Rollback(ctx), "the transaction, failed by the copy, rolls back")
		}},
		{"CopyFrom/Valuer panic in a transaction", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			tx, err := p.Begin(ctx)
			require.NoError(t, err)
			require.PanicsWithValue(t, "valuer boom", func() {
				_, _ = tx.CopyFrom(ctx, pgx.Identifier{"pgxm_copy"}, []string{"n"}, pgx.CopyFromRows([][]any{{panicValuer{}}}))
			})
			assert.NoError(t, tx.Rollback(ctx))
		}},

		// Panics in functions run with a connection.
		{"AcquireFunc/panic", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "f boom", func() { _ = p.AcquireFunc(ctx, func(*pgx.Conn) error { panic("f boom") }) })
		}},
		{"AcquireFunc/panic mid-query", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "f boom", func() {
				_ = p.AcquireFunc(ctx, func(c *pgx.Conn) error {
					rows, _ := c.Query(ctx, "SELECT generate_series(1, 1000)")
					_ = rows
					panic("f boom")
				})
			})
		}},
		{"BeginFunc/body panic", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "body boom", func() {
				_ = pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, "SELECT 1")
					require.NoError(t, err)
					panic("body boom")
				})
			})
		}},
		{"BeginTxFunc/body panic mid-query", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "body boom", func() {
				_ = pgx.BeginTxFunc(ctx, p, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
					rows, _ := tx.Query(ctx, "SELECT generate_series(1, 1000)")
					_ = rows // left busy: the deferred Rollback fails and pgx closes the connection
					panic("body boom")
				})
			})
		}},
		{"BeginFunc/Valuer panic in the body", false, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "valuer boom", func() {
				_ = pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, "SELECT $1::text", panicValuer{})
					return err
				})
			})
		}},
		{"BeginFunc/Scanner panic in the body", true, func(t *testing.T, ctx context.Context, p *pgxmanager.Pool) {
			require.PanicsWithValue(t, "scanner boom", func() {
				_ = pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
					return tx.QueryRow(ctx, "SELECT 1").Scan(&panicScanner{})
				})
			})
		}},
	}
}

// errDecode is what the int4 codec of the pools in TestNoFailureLosesOrPoisonsTheConnection returns
// when it decodes a value for Values.
var errDecode = errors.New("int4 decode refused")

// failingInt4 is pgx's int4 codec, except that decoding into an any (as
// Rows.Values does) fails.
type failingInt4 struct{ pgtype.Int4Codec }

func (failingInt4) DecodeValue(*pgtype.Map, uint32, int16, []byte) (any, error) {
	return nil, errDecode
}

// Every failure of a call on a pool of one connection leaves the pool
// usable: the connection comes back (released, or destroyed and replaced
// when its state is unknown), the next query runs, and Close returns. A
// lost connection would make the next query wait for ever on a pool of one.
func TestNoFailureLosesOrPoisonsTheConnection(t *testing.T) {
	for _, f := range failures() {
		t.Run(f.name, func(t *testing.T) {
			pp, err := pool.New[*pgx.Conn](newManager(t, failureConfig(t)), pool.Config{MaxSize: 1})
			require.NoError(t, err)
			p := pgxmanager.NewPool(pp, pgxmanager.Options{})
			runFailure(t, f, failureTarget{
				p:      p,
				usable: func(t *testing.T, after string) { requireUsable(t, p, after) },
				stats:  p.Stats,
				close:  p.Close,
			})
		})
	}
}

// failureConfig is the Config of the pools the failures run on: the test
// server's, with pgxm_copy (for CopyFrom) and the failing int4 codec (for
// Values) on every connection.
func failureConfig(t *testing.T) pgxmanager.Config {
	t.Helper()
	cfg := config(t, uniqueName(t))
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		c.TypeMap().RegisterType(&pgtype.Type{Name: "int4", OID: pgtype.Int4OID, Codec: failingInt4{}})
		_, err := c.Exec(ctx, "CREATE TEMP TABLE pgxm_copy (n int4)")
		return err
	}
	return cfg
}

// failureTarget is a pool of one connection, seen through the Pool p that
// a failure runs on.
type failureTarget struct {
	p      *pgxmanager.Pool
	usable func(t *testing.T, after string) // fails the test unless the pool has its connection back and answers
	stats  func() pool.Stats
	close  func(context.Context) error
}

// runFailure runs f on the target's Pool and checks that the pool is
// usable after it, that the connection was destroyed if and only if f says
// so, and that the pool closes.
func runFailure(t *testing.T, f failure, target failureTarget) {
	t.Helper()
	ctx := ctxFor(t, 20*time.Second)
	target.usable(t, "its first query")
	before := target.stats()

	f.run(t, ctx, target.p)
	target.usable(t, f.name)
	s := target.stats()
	destroyed := s.ClosedBy[pool.CloseDestroy] + s.ClosedBy[pool.CloseReleaseCheck] -
		before.ClosedBy[pool.CloseDestroy] - before.ClosedBy[pool.CloseReleaseCheck]
	if f.destroyed {
		assert.EqualValues(t, 1, destroyed, "the connection was not destroyed")
	} else {
		assert.Zero(t, destroyed, "a connection fit for reuse was destroyed")
	}

	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, target.close(closeCtx), "Close waits for a connection never given back")
}

// A batch callback's error fails the batch and releases the connection.
func TestBatchCallbackErrorReleasesTheConnection(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 1})
	ctx := ctxFor(t, 10*time.Second)
	boom := errors.New("callback error")
	b := &pgx.Batch{}
	b.Queue("SELECT 1").QueryRow(func(pgx.Row) error { return boom })
	b.Queue("SELECT 2")
	require.ErrorIs(t, p.SendBatch(ctx, b).Close(), boom)
	requireUsable(t, p, "a batch callback's error")
}

// The everyday loop that returns on a Scan error, repeated on a pool of
// one: each iteration gets the connection back.
func TestScanErrorLoopReleasesEveryTime(t *testing.T) {
	p := openPool(t, uniqueName(t), pool.Config{MaxSize: 1, AcquireTimeout: 5 * time.Second})
	ctx := ctxFor(t, 30*time.Second)
	scanAll := func() error {
		rows, err := p.Query(ctx, "SELECT CASE WHEN n < 3 THEN n::text ELSE 'x' END FROM generate_series(1, 5) n")
		if err != nil {
			return err
		}
		for rows.Next() {
			var n int
			if err := rows.Scan(&n); err != nil {
				return fmt.Errorf("scan: %w", err)
			}
		}
		return rows.Err()
	}
	for range 20 {
		require.Error(t, scanAll())
	}
	requireUsable(t, p, "20 scan errors")
	require.Zero(t, p.Stats().Closed, "a Scan error leaves the connection fit for reuse")
}
