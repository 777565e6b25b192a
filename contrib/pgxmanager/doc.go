// Package pgxmanager pools PostgreSQL connections of jackc/pgx (*pgx.Conn)
// with poolkit's pool, behind pgxpool's API.
//
// Open, or OpenConfig with a PoolConfig from ParsePoolConfig, returns a Pool
// with pgxpool.Pool's methods: Exec, Query, QueryRow, SendBatch, Begin,
// BeginTx, CopyFrom and Ping each acquire a connection and release it when
// the call is done with it (see Pool for when); Acquire and AcquireFunc hand
// one out; Stat has pgxpool.Stat's method names. pgxpool's defaults and its
// connection-string parameters (pool_max_conns and the others) apply.
// OpenKeyed returns a KeyedPool for many databases or roles (a tenant's
// each) under one budget of connections; For(key) returns the key's Pool.
// New returns the Manager itself, a manager.Manager[*pgx.Conn] with
// pgxpool's hooks, for a pool.Pool of one's own, and NewPool puts the facade
// over such a pool.
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
// # What a caller can rely on
//
//   - A connection handed out has passed the Manager's checks: one the
//     server has terminated while it was idle is closed, not handed out, so
//     only the calls in flight when a connection breaks fail, with pgx's
//     error.
//   - A connection released closed, busy (a result not read to its end) or
//     inside a transaction is closed, not handed to the next caller; so is
//     one whose call panicked: the panic goes on to the caller, and the
//     Rows, Row or BatchResults of that call fail with ErrPanicked.
//   - A call that failed before anything of it reached the server
//     (pgconn.SafeToRetry) is retried once on another connection, as Pool
//     says which calls; nothing else is retried. Options.DisableRetry turns
//     it off.
//   - The server never holds more of a pool's connections than its MaxSize
//     (a KeyedPool's: its MaxSize, all keys together): a closed
//     connection's slot is free once the server has let go of it, or after
//     Config.CloseTimeout.
//   - A call whose ctx ends while it waits for a connection returns an
//     error matching ctx's; it does not wait for a ping in progress, which
//     Config.PingTimeout bounds.
//   - Close(ctx) returns once every connection is closed, leased ones once
//     they are released, or with ctx's error.
//   - A bad configuration is an error, from the constructor or the parser,
//     that matches ErrInvalidConfig and pool.ErrInvalidConfig and names
//     what is wrong. Misuse panics with the package's name: "pgxmanager:"
//     for the facade's (closing a key's Pool), "pool:" for a lease's (a
//     second Release).
//
// # Examples and further reading
//
// Example opens a pool as pgxpool.New would; ExampleOpenConfig configures
// one as a pgxpool.Config would; ExampleNew puts a Manager with hooks of its
// own under a pool.Pool; ExampleOpenKeyed serves many tenant databases under
// one budget. MIGRATING.md, in this module's folder, maps pgxpool's
// configuration, parameters, hooks, methods and statistics to pgxmanager's,
// says how to run behind PgBouncer and lists what differs on purpose (a
// second Release panics; Close takes a context; Acquire returns a
// pool.Lease; code typed on *pgxpool.Pool cannot take the facade). How the
// checks and closes work is in Manager's documentation and in the
// repository's docs/decisions/0013-pgxmanager-ping-and-close.md.
package pgxmanager
