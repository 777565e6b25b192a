// Package pgxmanager pools PostgreSQL connections of jackc/pgx
// (*pgx.Conn) with poolkit's pool, and offers pgxpool's API over them.
//
// Manager is a manager.Manager[*pgx.Conn], built from a Config (ParseConfig
// makes one from a connection string): Connect opens a connection between
// pgxpool's BeforeConnect and AfterConnect hooks; Recycle checks it before
// it is handed out again, without a round trip unless a ping is due
// (ShouldPing, or an idle time of PingAfter), and without ever waiting on
// pgconn's background reader; a ping runs detached from the acquirer's
// context, bounded by PingTimeout; its CheckRelease refuses a connection
// released closed, busy or inside a transaction, or one AfterRelease
// refuses; Close runs BeforeClose, says goodbye and returns once the server
// has let go of the connection (its backend has exited), within
// CloseTimeout: the server never holds more of a pool's connections than
// its MaxSize.
//
// Pool is a facade over pool.Pool[*pgx.Conn] with pgxpool.Pool's methods:
// Exec, Query, QueryRow, SendBatch, Begin, BeginTx, CopyFrom, Ping, each
// acquiring a connection and releasing it when the call is done with it,
// and Acquire, AcquireFunc, Config, Reset, Stat (with pgxpool.Stat's method
// names) and Close. Open and OpenConfig make one with pgxpool's defaults
// and connection-string parameters (pool_max_conns and the others, see
// ParsePoolConfig); NewPool puts one over any pool of *pgx.Conn.
//
// KeyedPool is the facade for many databases or roles (a tenant's each)
// under one budget: a pool.Keyed[K, *pgx.Conn], whose MaxSize bounds the
// connections of all keys together, exactly, and whose keys take room from
// each other's idle connections as their load asks. OpenKeyed makes one
// from a function that gives each key's pgx.ConnConfig, with a Manager's
// checks and hooks for every key's connections and pgxpool's defaults;
// For(key) returns the key's DB, with Pool's query methods.
//
// # Moving from pgxpool
//
// The query methods have pgxpool.Pool's signatures; what changes is how the
// pool is made and closed, and Acquire, which returns a pool.Lease:
//
//	// pgxpool:
//	p, err := pgxpool.New(ctx, dsn)
//	defer p.Close()
//	c, err := p.Acquire(ctx)
//	defer c.Release()
//	c.Conn().Exec(ctx, sql)
//
//	// pgxmanager:
//	p, err := pgxmanager.Open(dsn, pool.Config{})
//	defer p.Close(ctx)
//	l, err := p.Acquire(ctx)
//	defer l.Release()
//	l.Value().Exec(ctx, sql)
//
// MIGRATING.md, in this module's directory, maps pgxpool's configuration
// fields, connection-string parameters, hooks, methods and statistics to
// pgxmanager's, says how to run behind PgBouncer, and lists what differs on
// purpose (a second Release panics; Close takes a context and returns an
// error; Acquire returns a Lease; code typed on *pgxpool.Pool, such as
// pgx/stdlib.OpenDBFromPool, cannot take the facade).
//
// # What a caller sees when a connection breaks
//
// A query on a connection the server has terminated fails with pgx's
// error; the connection is then closed, not handed out again. Idle
// connections the server has terminated are found by Recycle before they are
// handed out: only queries in flight when a connection breaks fail. A query
// that failed before any of it reached the server (pgconn.SafeToRetry) is
// retried once on another connection (see Pool).
package pgxmanager
