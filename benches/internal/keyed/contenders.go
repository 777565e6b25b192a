package keyed

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/poolkit/poolkit/benches/internal/results"
	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// client is a contender opened against a server. Its functions may be
// called from any goroutine.
type client struct {
	// acquire gets a connection to tenant t's database; done gives it back,
	// told whether the query left it broken.
	acquire func(ctx context.Context, t int) (c *pgx.Conn, done func(broken bool), err error)
	// counts reads the contender's counters so far.
	counts func() counts
	close  func()
}

// counts are a contender's counters.
type counts struct {
	// acquires is the connections handed out; connects those tried, the
	// refused included.
	acquires, connects int64
	// evicted is the connections closed to make room for another
	// tenant's, by reason (evictReasons); nil where the contender does not
	// evict.
	evicted map[string]int64
}

// evictions is the connections closed for room, for every reason.
func (c counts) evictions() int64 {
	var n int64
	for _, v := range c.evicted {
		n += v
	}
	return n
}

// evictReasons are the reasons for which the keyed pool closes an idle
// connection to make room for another key's, by the name of their
// constant: every constant of package pool whose name starts with
// CloseEvict. A reason added to the pool is added here
// (TestEvictReasonsAreThePoolsCloseEvictConstants reads the pool's source
// for them).
var evictReasons = []struct {
	name   string
	reason pool.CloseReason
}{
	{"CloseEvict", pool.CloseEvict},
	{"CloseEvictSurplus", pool.CloseEvictSurplus},
	{"CloseEvictHot", pool.CloseEvictHot},
}

// evicted is Stats().ClosedBy of every reason of evictReasons.
func evicted(st pool.Stats) map[string]int64 {
	m := make(map[string]int64, len(evictReasons))
	for _, r := range evictReasons {
		m[r.name] = int64(st.ClosedBy[r.reason])
	}
	return m
}

// contender is one way to pool the tenants' connections.
type contender struct {
	name   string
	evicts bool
	setup  func(st results.KeyedSettings) string
	open   func(ctx context.Context, srv *server, st results.KeyedSettings) (client, error)
}

// contenders are the case's, in the order of the first round: poolkit's
// keyed pool, bounded across the tenants, and a pgxpool per tenant, sized
// as is usual (4) and as small as it goes (1), neither bounded across
// them.
var contenders = []contender{
	{name: "poolkit keyed", evicts: true, setup: keyedSetup, open: openKeyed},
	pgxpoolPerTenant(4),
	pgxpoolPerTenant(1),
}

func keyedSetup(st results.KeyedSettings) string {
	perKey := fmt.Sprintf("MaxSizePerKey %d", st.MaxSizePerKey)
	if st.MaxSizePerKey == 0 {
		perKey = "no MaxSizePerKey (MaxSize)"
	}
	return fmt.Sprintf("pgxmanager.OpenKeyed, one pool.Keyed for every tenant, MaxSize %d across them, %s, "+
		"pgxpool's defaults otherwise (a ping after a second idle, lifetimes, health checks); a key is a tenant's "+
		"database, its connections made with that database's pgx.ConnConfig", st.MaxSize, perKey)
}

// openKeyed is poolkit's keyed pool of pgx connections
// (pgxmanager.OpenKeyed), one key per tenant database.
func openKeyed(_ context.Context, srv *server, st results.KeyedSettings) (client, error) {
	return openKeyedPool(srv.tenants, srv.configs, pool.KeyedConfig{MaxSize: st.MaxSize, MaxSizePerKey: st.MaxSizePerKey, PerKey: pool.Config{Name: "tenants"}})
}

// openKeyedPool is pgxmanager.OpenKeyed of cfg over the databases dbs,
// each key a database whose connections are made with its configs entry
// (which must not change afterwards).
func openKeyedPool(dbs []string, configs map[string]*pgx.ConnConfig, cfg pool.KeyedConfig) (client, error) {
	kp, err := pgxmanager.OpenKeyed(func(_ context.Context, db string) (*pgx.ConnConfig, error) {
		return configs[db], nil
	}, cfg)
	if err != nil {
		return client{}, err
	}
	fors := make([]*pgxmanager.Pool, len(dbs))
	for i, name := range dbs {
		fors[i] = kp.For(name)
	}
	return client{
		acquire: func(ctx context.Context, t int) (*pgx.Conn, func(bool), error) {
			l, err := fors[t].Acquire(ctx)
			if err != nil {
				return nil, nil, err
			}
			return l.Value(), func(broken bool) {
				if broken {
					l.Destroy()
					return
				}
				l.Release()
			}, nil
		},
		counts: func() counts {
			st := kp.Pool().Stats()
			return counts{acquires: int64(st.Acquires), connects: int64(st.Connects), evicted: evicted(st)}
		},
		close: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = kp.Close(ctx)
		},
	}, nil
}

// pgxpoolPerTenant is one pgxpool per tenant database of MaxConns n and
// pgxpool's defaults otherwise, the usual way to serve many databases.
func pgxpoolPerTenant(n int) contender {
	return contender{
		name: fmt.Sprintf("pgxpool per tenant, MaxConns %d", n),
		setup: func(st results.KeyedSettings) string {
			return fmt.Sprintf("a pgxpool per tenant database, MaxConns %d, its defaults otherwise: up to %d connections for %d tenants, "+
				"where the server allows the clients %d", n, n*st.Tenants, st.Tenants, st.ClientSlots())
		},
		open: func(ctx context.Context, srv *server, _ results.KeyedSettings) (client, error) {
			cfgs := make([]*pgxpool.Config, len(srv.tenants))
			for i := range cfgs {
				cfg, err := pgxpool.ParseConfig(srv.dsn(i))
				if err != nil {
					return client{}, err
				}
				cfg.MaxConns = int32(n)
				cfgs[i] = cfg
			}
			return openPgxpools(ctx, cfgs)
		},
	}
}

// openPgxpools is a pgxpool per tenant, tenant t's of cfgs[t].
func openPgxpools(ctx context.Context, cfgs []*pgxpool.Config) (client, error) {
	pools := make([]*pgxpool.Pool, len(cfgs))
	closeAll := func() {
		for _, p := range pools {
			if p != nil {
				p.Close()
			}
		}
	}
	for i, cfg := range cfgs {
		var err error
		if pools[i], err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
			closeAll()
			return client{}, err
		}
	}
	return client{
		acquire: func(ctx context.Context, t int) (*pgx.Conn, func(bool), error) {
			c, err := pools[t].Acquire(ctx)
			if err != nil {
				return nil, nil, err
			}
			// pgxpool destroys a connection it finds closed itself.
			return c.Conn(), func(bool) { c.Release() }, nil
		},
		counts: func() counts {
			var sum counts
			for _, p := range pools {
				st := p.Stat()
				sum.acquires += st.AcquireCount()
				sum.connects += st.NewConnsCount()
			}
			return sum
		},
		close: closeAll,
	}, nil
}
