package pgxmanager

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// KeyedPool runs queries for many keys (a tenant's database, a role, a
// server) on one pool.Keyed[K, *pgx.Conn]: one budget of connections,
// pool.KeyedConfig.MaxSize, exact across all keys (idle, leased, connecting
// and closing ones), which the keys share as their load asks. For(key)
// returns the key's Pool, which runs Pool's query methods on the key's
// connections.
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
	base   *Pool // the facade's options and retry count, which every key's Pool copies; never written after OpenKeyedConfig
	perKey int   // a key's MaxSizePerKey
}

// KeyedPoolConfig is what OpenKeyedConfig opens a KeyedPool with: where each
// key's connections go (ConfigFor), the Manager's hooks and timeouts
// (Config, shared by every key, ConnConfig left nil), the facade's Options
// and the keyed pool's configuration.
//
// Pool.MaxSize, the budget of all keys' connections together, is required,
// as pool.KeyedConfig says: a zero or negative one is an error (pgxpool's
// default, sized for one database, has no meaning for many). In
// Pool.PerKey, a zero means pgxpool's default for MaxLifetime (1 h),
// MaxIdleTime (30 min) and HealthCheckPeriod (1 min), as in PoolConfig, and
// pool.Config's default for the others; a negative MaxLifetime,
// MaxIdleTime or HealthCheckPeriod means none.
type KeyedPoolConfig[K comparable] struct {
	// ConfigFor returns the connection configuration of key's connections;
	// it runs before each connect of key, under the connect's context, on a
	// goroutine of the pool's (a panic becomes an error of the connect). It
	// must return a configuration made by pgx.ParseConfig (or the
	// ConnConfig of ParsePoolConfig here), or a Copy of one, without
	// pgxpool's pool_* parameters; the pool does not modify it
	// (BeforeConnect gets a copy), so it may return the same one for every
	// connect of a key. An error fails the connect. Required.
	ConfigFor func(ctx context.Context, key K) (*pgx.ConnConfig, error)
	// Config holds the Manager's hooks and timeouts; its ConnConfig must
	// be nil (ConfigFor gives each key's).
	Config
	Options
	Pool pool.KeyedConfig
}

// OpenKeyed opens a KeyedPool whose connections for a key are made with
// configFor's configuration for it (see KeyedPoolConfig.ConfigFor), in a
// pool.Keyed of cfg with pgxpool's defaults in its zero fields but MaxSize,
// which is required (see KeyedPoolConfig), with the Manager's and the
// facade's defaults. It does not connect: the first query of a key does (or
// the keyed pool's Warm, or its maintainer with cfg.PerKey.MinIdle set, for
// keys it has seen). A bad configuration is an error that matches
// ErrInvalidConfig and pool.ErrInvalidConfig and names the field.
func OpenKeyed[K comparable](configFor func(ctx context.Context, key K) (*pgx.ConnConfig, error), cfg pool.KeyedConfig) (*KeyedPool[K], error) {
	return OpenKeyedConfig(&KeyedPoolConfig[K]{ConfigFor: configFor, Pool: cfg})
}

// OpenKeyedConfig opens a KeyedPool of cfg (see KeyedPoolConfig). A bad
// configuration (a nil cfg or ConfigFor, a ConnConfig set, a bad field of
// cfg.Config, as New says, or of cfg.Pool, as pool.NewKeyed says) is an
// error that matches ErrInvalidConfig and pool.ErrInvalidConfig and names
// what is wrong.
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
		return nil, asConfigError(err)
	}
	perKey := kc.MaxSizePerKey
	if perKey == 0 {
		perKey = kc.MaxSize
	}
	base := facade(cfg.Options)
	base.m = m
	return &KeyedPool[K]{k: k, m: m, base: base, perKey: perKey}, nil
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

// For returns key's Pool: Pool's query methods, Acquire and AcquireFunc
// on key's connections (an acquire waits, when the budget is spent, as
// pool.Keyed.Acquire does), with the behaviour they have on a pool's (when
// each releases its connection, what a panic destroys, which failures are
// retried, the Options); its Name, Stats, Stat and Reset are the key's, and
// its Close and Pool panic (see Pool). It satisfies sqlc's DBTX interface,
// and pgx.BeginFunc takes it. For allocates two small objects and nothing
// else (the key's state is made by its first acquire): a caller that runs
// several queries for a key may keep its Pool, or call For for each.
func (kp *KeyedPool[K]) For(key K) *Pool {
	p := new(Pool)
	*p = *kp.base
	p.src = keySource[K]{k: kp.k, key: key, perKey: kp.perKey}
	return p
}

// keySource is the source of a key's Pool: its key's connections.
type keySource[K comparable] struct {
	k      *pool.Keyed[K, *pgx.Conn]
	key    K
	perKey int // the key's MaxSizePerKey
}

func (s keySource[K]) Acquire(ctx context.Context) (pool.Lease[*pgx.Conn], error) {
	return s.k.Acquire(ctx, s.key)
}

func (s keySource[K]) maxSize() int { return s.perKey }
func (s keySource[K]) name() string { return s.k.Name() }
func (s keySource[K]) reset()       { s.k.ResetKey(s.key) }

func (s keySource[K]) stats() pool.Stats {
	if st, ok := s.k.KeyStats(s.key); ok {
		return st
	}
	return pool.Stats{MaxSize: s.perKey}
}

// Pool returns the underlying keyed pool, for its Stats (every key's
// together), KeyStats, RangeKeys, Warm, Reset (every key's), TryAcquire and
// Len.
func (kp *KeyedPool[K]) Pool() *pool.Keyed[K, *pgx.Conn] { return kp.k }

// Stat returns the statistics of all keys together under pgxpool.Stat's
// method names, with the facade's own counters (of every key's Pool).
func (kp *KeyedPool[K]) Stat() *Stat {
	return &Stat{s: kp.k.Stats(), retries: kp.base.retries.Load(), forced: kp.m.forcedCloses()}
}

// Close closes the pool (see pool.Keyed.Close): it returns once every
// connection of every key is closed, leased ones included once they are
// released, or ctx's error.
func (kp *KeyedPool[K]) Close(ctx context.Context) error { return kp.k.Close(ctx) }
