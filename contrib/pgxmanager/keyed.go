package pgxmanager

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// KeyedPool runs queries for many keys (a tenant's database, a role, a
// server) on one pool.Keyed[K, *pgx.Conn]: one budget of connections,
// pool.KeyedConfig.MaxSize, exact across all keys (idle, leased, connecting
// and closing ones), which the keys share as their load asks. For(key)
// returns the key's DB, which has Pool's query methods.
//
// A key that needs a connection when the budget is spent gets room by
// closing the least recently used idle connection of a key nobody waits
// for (pool.CloseEvict); it waits (first come, first served across keys)
// only when no connection is idle anywhere. A
// key's state is dropped once its last connection has closed and nobody
// waits for it, so keys may come and go without bound.
//
// Every connection is made, checked and closed by a Manager (see Manager:
// Connect with BeforeConnect and AfterConnect, Recycle's checks before
// reuse, CheckRelease's refusal of a connection left closed, busy or in a
// transaction, Close's bounded goodbye), with the configuration
// KeyedPoolConfig.ConfigFor gives for its key. It is safe for concurrent
// use.
type KeyedPool[K comparable] struct {
	k      *pool.Keyed[K, *pgx.Conn]
	m      *Manager
	base   *Pool // the facade's options and retry count, which every DB copies; never written after OpenKeyedConfig
	perKey int   // a key's MaxSizePerKey
}

// KeyedPoolConfig is what OpenKeyedConfig opens a KeyedPool with: where each
// key's connections go (ConfigFor), the Manager's hooks and timeouts
// (Config, shared by every key, ConnConfig left nil), the facade's Options
// and the keyed pool's configuration.
//
// In Pool, a zero field means pgxpool's default for MaxSize
// (DefaultMaxSize), MaxLifetime (DefaultMaxLifetime), MaxIdleTime
// (DefaultMaxIdleTime) and HealthCheckPeriod (DefaultHealthCheckPeriod), as
// in PoolConfig, and pool.KeyedConfig's default for the others; a negative
// MaxLifetime, MaxIdleTime or HealthCheckPeriod means none.
type KeyedPoolConfig[K comparable] struct {
	// ConfigFor returns the connection configuration of key's connections;
	// it runs before each connect of key, under the connect's context, on a
	// goroutine of the pool's (a panic becomes an error of the connect). It
	// must return a configuration made by pgx.ParseConfig (or ParseConfig
	// here), or a Copy of one, without pgxpool's pool_* parameters; the pool
	// does not modify it (BeforeConnect gets a copy), so it may return the
	// same one for every connect of a key. An error fails the connect.
	// Required.
	ConfigFor func(ctx context.Context, key K) (*pgx.ConnConfig, error)
	// Config holds the Manager's hooks and timeouts; its ConnConfig must
	// be nil (ConfigFor gives each key's).
	Config
	Options
	Pool pool.KeyedConfig
}

// OpenKeyed opens a KeyedPool whose connections for a key are made with
// configFor's configuration for it (see KeyedPoolConfig.ConfigFor), in a
// pool.Keyed of cfg with pgxpool's defaults in its zero fields (see
// KeyedPoolConfig), with the Manager's and the facade's defaults. It does
// not connect: the first query of a key does (or Warm, or the pool's
// maintainer with cfg.MinIdlePerKey set, for keys it has seen). Config
// errors name the bad field.
func OpenKeyed[K comparable](configFor func(ctx context.Context, key K) (*pgx.ConnConfig, error), cfg pool.KeyedConfig) (*KeyedPool[K], error) {
	return OpenKeyedConfig(&KeyedPoolConfig[K]{ConfigFor: configFor, Pool: cfg})
}

// OpenKeyedConfig opens a KeyedPool of cfg (see KeyedPoolConfig). New's and
// pool.NewKeyed's errors (naming a bad field) are returned.
func OpenKeyedConfig[K comparable](cfg *KeyedPoolConfig[K]) (*KeyedPool[K], error) {
	switch {
	case cfg == nil:
		return nil, fmt.Errorf("%w: nil *KeyedPoolConfig", ErrInvalidConfig)
	case cfg.ConfigFor == nil:
		return nil, fmt.Errorf("%w: KeyedPoolConfig.ConfigFor is nil", ErrInvalidConfig)
	case cfg.ConnConfig != nil:
		return nil, fmt.Errorf("%w: KeyedPoolConfig.ConnConfig is set: ConfigFor gives each key's", ErrInvalidConfig)
	}
	m, err := newManager(cfg.Config)
	if err != nil {
		return nil, err
	}
	kc := forKeyed(keyedDefaults(cfg.Pool))
	k, err := pool.NewKeyed[K, *pgx.Conn](keyedManager[K]{Manager: m, configFor: cfg.ConfigFor}, kc)
	if err != nil {
		return nil, err
	}
	perKey := kc.MaxSizePerKey
	if perKey == 0 {
		perKey = kc.MaxSize
	}
	return &KeyedPool[K]{k: k, m: m, base: facade(cfg.Options), perKey: perKey}, nil
}

// keyedManager is a KeyedPool's manager.Keyed: a Manager whose connections
// each take the configuration configFor gives for their key.
type keyedManager[K comparable] struct {
	*Manager
	configFor func(ctx context.Context, key K) (*pgx.ConnConfig, error)
}

var (
	_ manager.Keyed[string, *pgx.Conn]  = keyedManager[string]{}
	_ manager.ReleaseChecker[*pgx.Conn] = keyedManager[string]{}
)

// Connect is Manager.Connect with ConfigFor's configuration for key.
func (m keyedManager[K]) Connect(ctx context.Context, key K) (*pgx.Conn, error) {
	var cc *pgx.ConnConfig
	err := guard("ConfigFor", func() (err error) {
		cc, err = m.configFor(ctx, key)
		return err
	})
	if err != nil {
		return nil, err
	}
	if cc == nil {
		return nil, fmt.Errorf("%w: KeyedPoolConfig.ConfigFor returned a nil *pgx.ConnConfig", ErrInvalidConfig)
	}
	if name, ok := poolParam(cc); ok {
		return nil, fmt.Errorf("%w: KeyedPoolConfig.ConfigFor's RuntimeParams has %s, %s", ErrInvalidConfig, name, poolParamAdvice)
	}
	return m.connect(ctx, cc)
}

// For returns key's DB: Pool's query methods on key's connections. It
// allocates two small objects and nothing else (the key's state is made by
// its first acquire): a caller that runs several queries for a key may keep
// the DB, or call For for each.
func (kp *KeyedPool[K]) For(key K) *DB {
	db := &DB{p: *kp.base}
	db.p.src = keySource[K]{k: kp.k, key: key, perKey: kp.perKey}
	return db
}

// keySource is the source of a DB: its key's connections.
type keySource[K comparable] struct {
	k      *pool.Keyed[K, *pgx.Conn]
	key    K
	perKey int // the key's MaxSizePerKey
}

func (s keySource[K]) Acquire(ctx context.Context) (pool.Lease[*pgx.Conn], error) {
	return s.k.Acquire(ctx, s.key)
}

func (s keySource[K]) maxSize() int { return s.perKey }

// Pool returns the underlying keyed pool, for TryAcquire, RangeKeys, Len.
func (kp *KeyedPool[K]) Pool() *pool.Keyed[K, *pgx.Conn] { return kp.k }

// Stats returns the statistics of all keys together (pool.Keyed.Stats).
func (kp *KeyedPool[K]) Stats() pool.Stats { return kp.k.Stats() }

// KeyStats returns key's statistics, or false if the key has no state now
// (no connection, nobody waiting for one); see pool.Keyed.KeyStats.
func (kp *KeyedPool[K]) KeyStats(key K) (pool.Stats, bool) { return kp.k.KeyStats(key) }

// Stat returns the statistics of all keys together under pgxpool.Stat's
// method names, with the facade's own counters (of every key's DB).
func (kp *KeyedPool[K]) Stat() *Stat {
	return &Stat{s: kp.k.Stats(), retries: kp.base.retries.Load(), forced: kp.m.ForcedCloses()}
}

// Warm connects max(MinIdlePerKey, 1) connections for each of keys, within
// the budget, key after key (pool.Keyed.Warm); it returns the errors of the
// keys that failed, joined.
func (kp *KeyedPool[K]) Warm(ctx context.Context, keys ...K) error { return kp.k.Warm(ctx, keys...) }

// Reset closes every idle connection of every key, and every leased one
// when it is released, leaving the pool open (pool.Keyed.Reset).
func (kp *KeyedPool[K]) Reset() { kp.k.Reset() }

// ResetKey is Reset for key's connections only: after a tenant's database
// moved, or its role's password changed.
func (kp *KeyedPool[K]) ResetKey(key K) { kp.k.ResetKey(key) }

// Close closes the pool (see pool.Keyed.Close): it returns once every
// connection of every key is closed, leased ones included once they are
// released, or ctx's error.
func (kp *KeyedPool[K]) Close(ctx context.Context) error { return kp.k.Close(ctx) }

// DB runs queries on one key's connections of a KeyedPool, made by
// KeyedPool.For. Its methods are Pool's, with the same behaviour (when each
// releases its connection, what a panic destroys, which failures are
// retried, the Options), on connections of its key: an acquire waits, when
// the budget is spent, as pool.Keyed.Acquire does. It satisfies sqlc's DBTX
// interface, and pgx.BeginFunc takes it. It is safe for concurrent use; the
// Rows, Row, BatchResults and Tx it returns are not.
type DB struct {
	p Pool // src is the key's; never written after For
}

// Acquire is Pool.Acquire on the key's connections.
func (db *DB) Acquire(ctx context.Context) (pool.Lease[*pgx.Conn], error) { return db.p.Acquire(ctx) }

// AcquireFunc is Pool.AcquireFunc on the key's connections.
func (db *DB) AcquireFunc(ctx context.Context, f func(*pgx.Conn) error) error {
	return db.p.AcquireFunc(ctx, f)
}

// Exec is Pool.Exec on the key's connections.
func (db *DB) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return db.p.Exec(ctx, sql, args...)
}

// Query is Pool.Query on the key's connections.
func (db *DB) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return db.p.Query(ctx, sql, args...)
}

// QueryRow is Pool.QueryRow on the key's connections.
func (db *DB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return db.p.QueryRow(ctx, sql, args...)
}

// SendBatch is Pool.SendBatch on the key's connections.
func (db *DB) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return db.p.SendBatch(ctx, b)
}

// Begin is Pool.Begin on the key's connections.
func (db *DB) Begin(ctx context.Context) (pgx.Tx, error) { return db.p.Begin(ctx) }

// BeginTx is Pool.BeginTx on the key's connections.
func (db *DB) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	return db.p.BeginTx(ctx, opts)
}

// CopyFrom is Pool.CopyFrom on the key's connections.
func (db *DB) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	return db.p.CopyFrom(ctx, table, columns, src)
}

// Ping is Pool.Ping on the key's connections.
func (db *DB) Ping(ctx context.Context) error { return db.p.Ping(ctx) }
