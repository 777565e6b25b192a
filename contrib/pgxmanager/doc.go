// Package pgxmanager pools PostgreSQL connections of jackc/pgx
// (*pgx.Conn) with poolkit's pool.
//
// [Manager] is a manager.Manager[*pgx.Conn], built from a connection string
// ([ParseConfig]) or a *pgx.ConnConfig: Connect opens a connection and runs an
// AfterConnect hook; Recycle checks a connection before it is handed out
// again, without a round trip unless it has been idle for PingAfter (then a
// ping bounded by PingTimeout), and without ever waiting on pgconn's
// background reader; its CheckRelease refuses a connection released closed,
// busy or inside a transaction; Close is bounded by CloseTimeout.
//
// [Pool] is a small facade over pool.Pool[*pgx.Conn] with pgxpool's
// query methods (Exec, Query, QueryRow, SendBatch, Begin, BeginTx,
// CopyFrom, Ping), each acquiring a connection and releasing it when the
// call is done with it.
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
//	p, err := pgxmanager.Open(dsn, pool.Config{MaxSize: 16})
//	defer p.Close(ctx)
//	l, err := p.Acquire(ctx)
//	defer l.Release()
//	l.Value().Exec(ctx, sql)
//
// pgxpool.Config's fields map to pool.Config (MaxConns: MaxSize, MinIdleConns:
// MinIdle, MaxConnLifetime: MaxLifetime, MaxConnLifetimeJitter:
// LifetimeJitter, MaxConnIdleTime: MaxIdleTime) and to [Config] (AfterConnect;
// a ping after PingAfter idle, as pgxpool's default ShouldPing). Remove a
// connection string's pool_* parameters: pgx.ParseConfig passes them on to
// the server as settings, which it refuses ("unrecognized configuration
// parameter").
//
// # What a caller sees when a connection breaks
//
// A query on a connection the server has terminated fails with pgx's
// error; the connection is then closed, not handed out again. Idle
// connections the server has terminated are found by Recycle before they are
// handed out: only queries in flight when a connection breaks fail. Nothing
// is retried.
package pgxmanager
