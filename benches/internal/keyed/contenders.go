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
	return fmt.Sprintf("pgxmanager.OpenKeyed, one pool.Keyed for every tenant, MaxSize %d across them, %s, "+
		"pgxpool's defaults otherwise (a ping after a second idle, lifetimes, health checks); a key is a tenant's "+
		"database, its connections made with that database's pgx.ConnConfig", st.MaxSize, perKey)
}

// openKeyed is poolkit's keyed pool of pgx connections
// (pgxmanager.OpenKeyed), one key per tenant database.
func openKeyed(_ context.Context, srv *server, st results.KeyedSettings) (client, error) {
	kp, err := pgxmanager.OpenKeyed(func(_ context.Context, db string) (*pgx.ConnConfig, error) {
		return srv.configs[db], nil
	}, pool.KeyedConfig{Name: "tenants", MaxSize: st.MaxSize, MaxSizePerKey: st.MaxSizePerKey})
	if err != nil {
		return client{}, err
	}
	dbs := make([]*pgxmanager.DB, len(srv.tenants))
	for i, name := range srv.tenants {
		dbs[i] = kp.For(name)
	}
	return client{
		acquire: func(ctx context.Context, t int) (*pgx.Conn, func(bool), error) {
			l, err := dbs[t].Acquire(ctx)
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
		connects:  func() int64 { return int64(kp.Stats().Connects) },
		evictions: func() int64 { return int64(kp.Stats().ClosedBy[pool.CloseEvict]) },
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
