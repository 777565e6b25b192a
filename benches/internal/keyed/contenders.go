package keyed

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/poolkit/poolkit/benches/internal/results"
	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// client is a contender opened against the case's server. Its functions
// may be called from any goroutine.
type client struct {
	// acquire gets a connection to tenant t's database; done gives it back,
	// told whether the query left it broken.
	acquire func(ctx context.Context, t int) (c *pgx.Conn, done func(broken bool), err error)
	// connects is the connections tried so far, those refused included;
	// evictions those closed to make room for another tenant's (0 where
	// the contender does not).
	connects, evictions func() int64
	close               func()
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
	return fmt.Sprintf("one pool.NewKeyed for every tenant, MaxSize %d across them, %s, the defaults otherwise; "+
		"a manager.KeyedFuncs that connects to the tenant's database with pgx.ConnectConfig and checks and closes "+
		"with pgxmanager's Recycle, CheckRelease and Close (a ping after a second idle, as pgxpool)", st.MaxSize, perKey)
}

// openKeyed is poolkit's keyed pool, one key per tenant database.
func openKeyed(_ context.Context, srv *server, st results.KeyedSettings) (client, error) {
	// Recycle and Close do not depend on the database a connection is to.
	checks, err := pgxmanager.New(pgxmanager.Config{ConnConfig: srv.configs[srv.tenants[0]]})
	if err != nil {
		return client{}, err
	}
	m := tenantConns{
		KeyedFuncs: manager.KeyedFuncs[string, *pgx.Conn]{
			ConnectFunc: func(ctx context.Context, db string) (*pgx.Conn, error) {
				return pgx.ConnectConfig(ctx, srv.configs[db])
			},
			RecycleFunc: checks.Recycle,
			CloseFunc:   checks.Close,
		},
		checks: checks,
	}
	k, err := pool.NewKeyed[string, *pgx.Conn](m, pool.KeyedConfig{Name: "tenants", MaxSize: st.MaxSize, MaxSizePerKey: st.MaxSizePerKey})
	if err != nil {
		return client{}, err
	}
	return client{
		acquire: func(ctx context.Context, t int) (*pgx.Conn, func(bool), error) {
			l, err := k.Acquire(ctx, srv.tenants[t])
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
		connects:  func() int64 { return int64(k.Stats().Connects) },
		evictions: func() int64 { return int64(k.Stats().ClosedBy[pool.CloseEvict]) },
		close: func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = k.Close(ctx)
		},
	}, nil
}

// tenantConns is the keyed pool's manager: KeyedFuncs, with pgxmanager's
// release check, which refuses a connection released in a state the next
// user must not inherit, as pgxpool's Release does.
type tenantConns struct {
	manager.KeyedFuncs[string, *pgx.Conn]
	checks *pgxmanager.Manager
}

var _ manager.ReleaseChecker[*pgx.Conn] = tenantConns{}

func (m tenantConns) CheckRelease(c *pgx.Conn) error { return m.checks.CheckRelease(c) }

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
			pools := make([]*pgxpool.Pool, len(srv.tenants))
			closeAll := func() {
				for _, p := range pools {
					if p != nil {
						p.Close()
					}
				}
			}
			for i := range pools {
				cfg, err := pgxpool.ParseConfig(srv.dsn(i))
				if err != nil {
					closeAll()
					return client{}, err
				}
				cfg.MaxConns = int32(n)
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
				connects: func() int64 {
					var sum int64
					for _, p := range pools {
						sum += p.Stat().NewConnsCount()
					}
					return sum
				},
				evictions: func() int64 { return 0 },
				close:     closeAll,
			}, nil
		},
	}
}
