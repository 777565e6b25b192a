package pgxmanager

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/poolkit/poolkit/pool"
)

// Pool runs queries on a pool.Pool[*pgx.Conn] with pgxpool.Pool's methods,
// acquiring a connection for each call and releasing it when the call is
// done with it: at once for Exec, CopyFrom and Ping; when the rows are
// closed, read to their end, or fail (a Scan or Values error) for Query;
// when the row is scanned for QueryRow; when the results are closed for
// SendBatch; at Commit or Rollback for Begin. A call that does not release
// (rows never closed, a Tx never ended) holds its connection, as with
// pgxpool. It is safe for concurrent use; the Rows, Row, BatchResults and Tx
// it returns are not.
//
// A Pool is a pool's (from Open, OpenConfig or NewPool) or one key's of a
// KeyedPool (from KeyedPool.For). A key's Pool runs its calls on the key's
// connections, and its Name, Stats, Stat and Reset are the key's; the
// KeyedPool is closed as a whole, so its Close and Pool panic.
//
// A connection is released by these methods, and the Manager's
// CheckRelease closes one left closed, busy or in a transaction. A panic in
// the middle of a call on a connection (a driver.Valuer or codec encoding an
// argument, a Scanner, a batch's callback, the function of AcquireFunc)
// destroys the connection, whose protocol state is then unknown, and goes
// on to the caller; the Rows, Row or BatchResults it came from are closed
// with an error matching ErrPanicked. CopyFrom's source is read, and its
// rows encoded, on a goroutine of pgx's: the facade contains the panics of
// the source's methods and of its rows' driver.Valuers there, releases the
// connection, and panics on the caller's goroutine; other code pgx runs
// there to encode a row is not guarded (see CopyFrom). (A panic in the body
// of pgx.BeginFunc ends with the Rollback that BeginFunc defers: a
// connection that cannot roll back is closed by pgx, then refused on
// release.)
//
// # Retries
//
// A query that fails on a pooled connection before anything of it reached
// the server (pgconn.SafeToRetry: the connection was found dead while
// sending) is retried once, on another connection, after the first is
// destroyed, as database/sql does with driver.ErrBadConn; Stat's RetryCount
// counts them. Exec, Query (at its first Next), QueryRow, Begin, BeginTx and
// Ping retry; SendBatch and CopyFrom do not (their batch's or source's state
// has moved on by the time the error is known), nor does anything once the
// call's context has ended. Options.DisableRetry turns retries off.
type Pool struct {
	p       *pool.Pool[*pgx.Conn] // nil in a key's Pool
	src     source                // where Acquire takes connections from: p, or a key's
	m       *Manager              // the Manager OpenConfig or OpenKeyedConfig made; nil from NewPool
	cfg     *PoolConfig           // what Config returns copies of; never written after it is made
	prepare func(context.Context, *pgx.Conn) (bool, error)
	retry   bool
	retries *atomic.Int64 // shared by the key's Pools of a KeyedPool
}

// source is what a Pool's methods act on: a pool.Pool, or one key's
// connections of a pool.Keyed (a key's Pool's).
type source interface {
	Acquire(ctx context.Context) (pool.Lease[*pgx.Conn], error)
	// maxSize bounds PrepareConn's refusals in one call: one more than
	// the source's connections, each of which may be refused (and is then
	// destroyed). It is the configured bound, not a count of the moment:
	// a key whose connections are all destroyed has no state left.
	maxSize() int
	name() string
	stats() pool.Stats
	reset()
}

// poolSource is a pool.Pool as a source.
type poolSource struct{ *pool.Pool[*pgx.Conn] }

func (s poolSource) maxSize() int      { return s.Stats().MaxSize }
func (s poolSource) name() string      { return s.Name() }
func (s poolSource) stats() pool.Stats { return s.Stats() }
func (s poolSource) reset()            { s.Reset() }

// NewPool returns a Pool over p, whatever its Manager, with the facade's
// options opts. Its Config reports only opts; its Stat counts no forced
// closes (Stat.ForcedCloseCount), as it does not know p's Manager.
func NewPool(p *pool.Pool[*pgx.Conn], opts Options) *Pool {
	if p == nil {
		panic("pgxmanager: NewPool: nil pool")
	}
	fp := facade(opts)
	fp.p, fp.src = p, poolSource{p}
	return fp
}

// facade returns a Pool with the facade's options opts and no source yet.
func facade(opts Options) *Pool {
	fp := &Pool{cfg: &PoolConfig{Options: opts}, retry: !opts.DisableRetry, retries: new(atomic.Int64)}
	switch {
	case opts.PrepareConn != nil:
		fp.prepare = opts.PrepareConn
	case opts.BeforeAcquire != nil:
		before := opts.BeforeAcquire
		fp.prepare = func(ctx context.Context, c *pgx.Conn) (bool, error) { return before(ctx, c), nil }
	}
	return fp
}

// Open parses connString with ParsePoolConfig (pgx's parameters and
// pgxpool's pool_* ones), lets each non-zero field of pc override the pool
// configuration it gives (pc wins over the connection string, which wins
// over pgxpool's defaults), and opens the Pool with OpenConfig. Open(dsn,
// pool.Config{}) is pgxpool.New(ctx, dsn).
//
// The lifetime is one setting: if pc sets MaxLifetime or LifetimeJitter,
// pc's pair, in pool.Config's terms (the jitter taken off within
// MaxLifetime), replaces the connection string's pool_max_conn_lifetime and
// pool_max_conn_lifetime_jitter together. Of the pair, a zero
// LifetimeJitter means none, and a zero MaxLifetime the string's
// pool_max_conn_lifetime (else pgxpool's default, 1 h), without the
// string's jitter. So a MaxLifetime in pc is the longest a connection lives,
// whatever jitter the string gives.
func Open(connString string, pc pool.Config) (*Pool, error) {
	cfg, err := ParsePoolConfig(connString)
	if err != nil {
		return nil, err
	}
	if pc.MaxLifetime != 0 || pc.LifetimeJitter != 0 {
		// The string's jitter goes with the string's lifetime, to which
		// ParsePoolConfig added it.
		if cfg.Pool.MaxLifetime > 0 {
			cfg.Pool.MaxLifetime -= cfg.Pool.LifetimeJitter
		}
		cfg.Pool.LifetimeJitter = 0
	}
	override(&cfg.Pool, pc)
	return OpenConfig(cfg)
}

// OpenConfig returns a Pool of connections made by a Manager of cfg.Config,
// in a pool.Pool of cfg.Pool (with pgxpool's defaults in its zero fields:
// see PoolConfig), with the facade's cfg.Options. It works on a copy of
// cfg. It does not connect: the first query does (or the pool's
// maintainer, with cfg.Pool.MinIdle set). A bad configuration (a nil cfg,
// a bad field of cfg.Config, as New says, or of cfg.Pool, as pool.New
// says) is an error that matches ErrInvalidConfig and pool.ErrInvalidConfig
// and names what is wrong.
func OpenConfig(cfg *PoolConfig) (*Pool, error) {
	if cfg == nil {
		return nil, invalid("nil *PoolConfig")
	}
	c := cfg.Copy()
	pc, zeros := c.opened()
	m, err := New(c.Config)
	if err != nil {
		return nil, err
	}
	p, err := pool.New[*pgx.Conn](m, forPool(pc))
	if err != nil {
		return nil, asConfigError(err)
	}
	c.Config = m.cfg // with the Manager's defaults, for Config
	c.Pool, c.zeros = reported(pc, zeros)
	fp := NewPool(p, c.Options)
	fp.m, fp.cfg = m, c
	return fp, nil
}

// Pool returns the underlying pool, for SetMaxSize, Warm, TryAcquire. It
// panics for a key's Pool: KeyedPool.Pool has the keyed pool.
func (p *Pool) Pool() *pool.Pool[*pgx.Conn] {
	if p.p == nil {
		panic("pgxmanager: Pool of a key's Pool (KeyedPool.For): the keyed pool is KeyedPool.Pool")
	}
	return p.p
}

// Name returns the pool's name, pool.Config.Name (PoolConfig.Pool.Name),
// which contrib/poolprom and contrib/poolotel label its figures with; a
// key's Pool has its KeyedPool's (pool.KeyedConfig.Name).
func (p *Pool) Name() string { return p.src.name() }

// Config returns a copy of the configuration the Pool was opened with
// (OpenConfig, Open), defaults filled in, as pgxpool's Config does: fed to
// OpenConfig it opens the same pool again. MaxLifetime, MaxIdleTime and
// HealthCheckPeriod read as pgxpool's would: 0 for no lifetime limit, for
// no health checks, and for the idle time pool_max_conn_idle_time=0 gave
// (see PoolConfig); a MaxIdleTime of none, which pgxpool cannot set, stays
// negative. For a Pool made by NewPool, or a key's Pool, it holds only the
// Options.
func (p *Pool) Config() *PoolConfig { return p.cfg.Copy() }

// Stats returns the pool's statistics (pool.Pool.Stats). A key's Pool
// returns the key's (pool.Keyed.KeyStats), or, for a key without
// connections or waiters, zero figures and the key's MaxSize.
func (p *Pool) Stats() pool.Stats { return p.src.stats() }

// Stat returns the pool's statistics (Stats) under pgxpool.Stat's method
// names, with the facade's own counters. For a key's Pool, those two
// (RetryCount, ForcedCloseCount) are the KeyedPool's, every key's.
func (p *Pool) Stat() *Stat {
	st := &Stat{s: p.src.stats(), retries: p.retries.Load()}
	if p.m != nil {
		st.forced = p.m.forcedCloses()
	}
	return st
}

// Reset closes every idle connection, and every leased one when it is
// released, leaving the pool open (pool.Pool.Reset). A key's Pool resets
// the key's connections only (pool.Keyed.ResetKey): after a tenant's
// database moved, or its role's password changed.
func (p *Pool) Reset() { p.src.reset() }

// Close closes the pool (see pool.Pool.Close): it returns once every
// connection is closed, leased ones included once they are released, or
// ctx's error. It panics for a key's Pool: close its KeyedPool.
func (p *Pool) Close(ctx context.Context) error {
	if p.p == nil {
		panic("pgxmanager: Close of a key's Pool (KeyedPool.For): close the KeyedPool")
	}
	return p.p.Close(ctx)
}

// errTooManyRefusals ends an Acquire whose every connection PrepareConn
// refused.
var errTooManyRefusals = errors.New("pgxmanager: too many failed attempts acquiring a connection: PrepareConn (or BeforeAcquire) refused each one")

// Acquire returns a lease on a connection (see pool.Pool.Acquire), after
// Options.PrepareConn if it is set. Release it when done; it must not be
// used afterwards.
func (p *Pool) Acquire(ctx context.Context) (pool.Lease[*pgx.Conn], error) {
	if p.prepare == nil {
		return p.src.Acquire(ctx)
	}
	return p.acquirePrepared(ctx)
}

func (p *Pool) acquirePrepared(ctx context.Context) (pool.Lease[*pgx.Conn], error) {
	var none pool.Lease[*pgx.Conn]
	limit := 0 // MaxSize+1 refusals, read at the first
	for refusals := 0; ; refusals++ {
		if refusals > 0 {
			if limit == 0 {
				limit = p.src.maxSize() + 1
			}
			if refusals >= limit {
				return none, errTooManyRefusals
			}
		}
		l, err := p.src.Acquire(ctx)
		if err != nil {
			return none, err
		}
		ok, err := p.prepareOn(ctx, l)
		if !ok {
			l.Destroy()
		}
		if err != nil {
			if ok {
				l.Release()
			}
			return none, err
		}
		if ok {
			return l, nil
		}
	}
}

// prepareOn runs PrepareConn on l's connection; a panic destroys it.
func (p *Pool) prepareOn(ctx context.Context, l pool.Lease[*pgx.Conn]) (bool, error) {
	done := false
	defer destroyUnless(&done, l)
	ok, err := p.prepare(ctx, l.Value())
	done = true
	return ok, err
}

// destroyUnless is deferred around a call on a leased connection, with *done
// false until the call returns: a call that panicked leaves the protocol in
// an unknown state, so the connection is destroyed before the panic goes on.
func destroyUnless(done *bool, l pool.Lease[*pgx.Conn]) {
	if !*done {
		l.Destroy()
	}
}

// retryable reports whether a call that failed with err on its try'th
// attempt (from 0) is retried.
func (p *Pool) retryable(ctx context.Context, err error, try int) bool {
	return err != nil && try == 0 && p.retry && ctx.Err() == nil && pgconn.SafeToRetry(err)
}

// settle ends l after a call that returned err: it destroys l and reports
// true if the call is to be retried, else it releases l.
func (p *Pool) settle(ctx context.Context, l pool.Lease[*pgx.Conn], err error, try int) bool {
	if p.retryable(ctx, err, try) {
		l.Destroy()
		p.retries.Add(1)
		return true
	}
	l.Release()
	return false
}

// AcquireFunc acquires a connection, calls f with it and releases it; it
// returns the Acquire's error or f's. ctx bounds only the Acquire. If f
// panics the connection is destroyed and the panic goes on.
func (p *Pool) AcquireFunc(ctx context.Context, f func(*pgx.Conn) error) error {
	l, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	done := false
	defer destroyUnless(&done, l)
	err = f(l.Value())
	done = true
	l.Release()
	return err
}

// Exec acquires a connection, runs pgx.Conn.Exec on it and releases it.
func (p *Pool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	for try := 0; ; try++ {
		l, err := p.Acquire(ctx)
		if err != nil {
			return pgconn.CommandTag{}, err
		}
		tag, err := execOn(ctx, l, sql, args)
		if !p.settle(ctx, l, err, try) {
			return tag, err
		}
	}
}

func execOn(ctx context.Context, l pool.Lease[*pgx.Conn], sql string, args []any) (pgconn.CommandTag, error) {
	done := false
	defer destroyUnless(&done, l)
	tag, err := l.Value().Exec(ctx, sql, args...)
	done = true
	return tag, err
}

// Query acquires a connection and runs pgx.Conn.Query on it. The connection
// is released when the rows are closed, when Next returns false, or when
// Scan or Values fails (pgx closes the rows then); close them (rows.Close,
// or pgx.CollectRows and the like, which do). On an error the connection is
// already released and the returned Rows carry the error.
func (p *Pool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	for try := 0; ; try++ {
		l, err := p.Acquire(ctx)
		if err != nil {
			return errRows{err: err}, err
		}
		r, err := queryOn(ctx, l, sql, args)
		if err != nil {
			if p.settle(ctx, l, err, try) {
				continue
			}
			return errRows{err: err}, err
		}
		return &rows{Rows: r, h: lease{l: l, held: true}, p: p, ctx: ctx, sql: sql, args: args, fresh: try == 0}, nil
	}
}

func queryOn(ctx context.Context, l pool.Lease[*pgx.Conn], sql string, args []any) (pgx.Rows, error) {
	done := false
	defer destroyUnless(&done, l)
	r, err := l.Value().Query(ctx, sql, args...)
	done = true
	return r, err
}

// QueryRow acquires a connection and runs pgx.Conn.QueryRow on it. The
// connection is released by the row's Scan, which must be called. An
// Acquire error is returned by Scan.
func (p *Pool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	l, err := p.Acquire(ctx)
	if err != nil {
		return errRow{err: err}
	}
	return &row{r: queryRowOn(ctx, l, sql, args), h: lease{l: l, held: true}, p: p, ctx: ctx, sql: sql, args: args}
}

func queryRowOn(ctx context.Context, l pool.Lease[*pgx.Conn], sql string, args []any) pgx.Row {
	done := false
	defer destroyUnless(&done, l)
	r := l.Value().QueryRow(ctx, sql, args...)
	done = true
	return r
}

// SendBatch acquires a connection and sends b on it (pgx.Conn.SendBatch).
// The connection is released when the results are closed, which must
// happen; or, if b began a transaction (pgx.Batch.BeginTx), when that
// transaction (the results' Tx) ends with Commit or Rollback. An Acquire
// error is returned as pgx.FailedBatchResults does.
func (p *Pool) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	l, err := p.Acquire(ctx)
	if err != nil {
		return pgx.FailedBatchResults(b, err)
	}
	br := sendBatchOn(ctx, l, b)
	if t := br.Tx(); t != nil {
		return &batchResults{br: br, tx: &tx{Tx: t, h: lease{l: l, held: true}}}
	}
	return &batchResults{br: br, own: lease{l: l, held: true}}
}

func sendBatchOn(ctx context.Context, l pool.Lease[*pgx.Conn], b *pgx.Batch) pgx.BatchResults {
	done := false
	defer destroyUnless(&done, l)
	br := l.Value().SendBatch(ctx, b)
	done = true
	return br
}

// Begin acquires a connection and starts a transaction on it. The
// connection is released when the transaction ends with Commit or Rollback
// (defer tx.Rollback(ctx): it is a no-op after Commit). On an error the
// connection is already released.
func (p *Pool) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx is Begin with options (isolation level, access and deferrable
// modes, a BEGIN of one's own).
func (p *Pool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	for try := 0; ; try++ {
		l, err := p.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		t, err := beginOn(ctx, l, opts)
		if err != nil {
			if p.settle(ctx, l, err, try) {
				continue
			}
			return nil, err
		}
		return &tx{Tx: t, h: lease{l: l, held: true}}, nil
	}
}

func beginOn(ctx context.Context, l pool.Lease[*pgx.Conn], opts pgx.TxOptions) (pgx.Tx, error) {
	done := false
	defer destroyUnless(&done, l)
	t, err := l.Value().BeginTx(ctx, opts)
	done = true
	return t, err
}

// CopyFrom acquires a connection, runs pgx.Conn.CopyFrom on it and releases
// it. pgx reads src, and encodes its rows, on a goroutine of its own, where
// a panic would end the process. The facade guards the code of src there:
// a panic in src's Next, Values or Err, or in the Value method of a
// driver.Valuer that is one of a row's values (the facade calls Value
// itself, and pgx encodes what it returned), ends the copy as an error of
// the source would; the connection, in a known state, is released (and
// closed, as on any release, if pgx closed it or it is not idle), and the
// panic goes on from here, on the caller's goroutine. A panic in code that
// pgx itself runs to encode a value (a codec, pgtype's interfaces such as
// pgtype.Int64Valuer, a fmt.Stringer, a Valuer inside an array, a slice or a
// composite value) happens on pgx's goroutine and ends the process, as with
// pgxpool.
func (p *Pool) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	l, err := p.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	g := &guardedSource{src: src}
	done := false
	defer destroyUnless(&done, l)
	n, err := l.Value().CopyFrom(ctx, table, columns, g)
	done = true
	l.Release()
	g.rethrow()
	return n, err
}

// Ping acquires a connection, pings the server on it and releases it.
func (p *Pool) Ping(ctx context.Context) error {
	for try := 0; ; try++ {
		l, err := p.Acquire(ctx)
		if err != nil {
			return err
		}
		err = pingOn(ctx, l)
		if !p.settle(ctx, l, err, try) {
			return err
		}
	}
}

func pingOn(ctx context.Context, l pool.Lease[*pgx.Conn]) error {
	done := false
	defer destroyUnless(&done, l)
	err := l.Value().Ping(ctx)
	done = true
	return err
}
