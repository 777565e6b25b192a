package keyed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// target is the server the split cases run on and their tenant databases:
// the private cluster's first tenants, or databases made for the run on a
// server named by a connection string, and dropped after it. Its fields
// are set once, before any contender runs; its methods may be called from
// any goroutine.
type target struct {
	describe string
	dbs      []string // by tenant
	// client is the clients' connection string; each tenant's
	// configuration is it with the tenant's database and an
	// application_name of the contender's.
	client string
	// admin connects as a superuser, with app as the application_name.
	admin func(ctx context.Context, app string) (*pgx.Conn, error)
	// apps starts the application_name of every client connection of the
	// run, unique to it: a contender's is apps followed by its key.
	apps string
	// settleQuery, with settleArgs, counts the connections settle waits
	// for: on the private server every client's (the crowded case's
	// included), on a given one the run's.
	settleQuery string
	settleArgs  []any
	// drop removes what the target made on the server.
	drop func() error
}

// privateTarget is the first n tenants of the private cluster srv.
func privateTarget(srv *server, n int) *target {
	return &target{
		describe: srv.describe(),
		dbs:      srv.tenants[:n],
		client:   srv.pg.DSN(tenantRole, srv.tenants[0], appName),
		admin:    srv.pg.Admin,
		apps:     runApps(),
		drop:     func() error { return nil },
		// Every client connection, so that the crowded case's last
		// contender is gone too.
		settleQuery: countQuery,
	}
}

// runApps is the application_name prefix of a run: poolbench-keyed-, a
// random tag and a hyphen.
func runApps() string { return fmt.Sprintf("poolbench-keyed-%08x-", rand.Uint32()) }

// givenTarget makes n tenant databases (poolbench_keyed_TAG_00 …, TAG
// random) on the server dsn names, whose user must be allowed to create
// databases and see every session in pg_stat_activity (a superuser). The
// clients connect as that user.
func givenTarget(ctx context.Context, dsn string, n int) (*target, error) {
	base, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	tag := fmt.Sprintf("%08x", rand.Uint32())
	t := &target{
		client: dsn,
		apps:   "poolbench-keyed-" + tag + "-",
		// The run's connections only: the server is not the run's.
		settleQuery: appPrefixCountQuery,
		admin: func(ctx context.Context, app string) (*pgx.Conn, error) {
			cfg := base.Copy()
			cfg.RuntimeParams["application_name"] = app
			return pgx.ConnectConfig(ctx, cfg)
		},
		drop: func() error { return nil },
	}
	t.settleArgs = []any{t.apps}
	admin, err := t.admin(ctx, "poolbench-keyed-admin")
	if err != nil {
		return nil, err
	}
	defer admin.Close(context.Background())
	version := admin.PgConn().ParameterStatus("server_version")
	if i := strings.IndexByte(version, ' '); i > 0 {
		version = version[:i]
	}
	t.describe = fmt.Sprintf("PostgreSQL %s at %s:%d, a server given to poolbench", version, base.Host, base.Port)
	t.drop = func() error { return t.dropDatabases() }
	for i := range n {
		name := fmt.Sprintf("poolbench_keyed_%s_%02d", tag, i)
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			return nil, errors.Join(fmt.Errorf("CREATE DATABASE %s: %w", name, err), t.drop())
		}
		t.dbs = append(t.dbs, name)
	}
	return t, nil
}

// dropDatabases drops the databases givenTarget made, ending any session
// still in them, within a minute of its own (it runs after a Ctrl-C too).
// Each drop waits for a checkpoint, a second or more on a busy server, and
// the server serves the drops that wait together with one: they run all
// at once, on a connection each (20 drops took 31 s one after the other,
// 4.7 s at once).
func (t *target) dropDatabases() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make([]error, len(t.dbs))
	var wg sync.WaitGroup
	for i, name := range t.dbs {
		wg.Go(func() {
			admin, err := t.admin(ctx, "poolbench-keyed-admin")
			if err == nil {
				_, err = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
				admin.Close(context.Background())
			}
			if err != nil {
				errs[i] = fmt.Errorf("DROP DATABASE %s: %w", name, err)
			}
		})
	}
	wg.Wait()
	t.dbs = nil
	return errors.Join(errs...)
}

// config is tenant i's connection configuration, with app as its
// application_name.
func (t *target) config(i int, app string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(t.client)
	if err != nil {
		return nil, err
	}
	cfg.Database = t.dbs[i]
	cfg.RuntimeParams["application_name"] = app
	return cfg, nil
}

// poolConfig is a pgxpool's configuration for tenant i, with app as its
// connections' application_name and pgxpool's defaults.
func (t *target) poolConfig(i int, app string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(t.client)
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.Database = t.dbs[i]
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	return cfg, nil
}

// appCountQuery counts the sessions whose application_name is $1.
const appCountQuery = "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1"

// appPrefixCountQuery counts the sessions whose application_name starts
// with $1.
const appPrefixCountQuery = "SELECT count(*) FROM pg_stat_activity WHERE left(application_name, length($1)) = $1"

// settle waits, at most 30 s, until no connection it counts
// (settleQuery) is left on the server.
func (t *target) settle(ctx context.Context) error {
	admin, err := t.admin(ctx, "poolbench-keyed-admin")
	if err != nil {
		return err
	}
	return settleOn(ctx, admin, t.settleQuery, t.settleArgs...)
}

// connectCost is the median time of connectSamples connects to the
// tenants' databases, one after the other, each with its first query.
func (t *target) connectCost(ctx context.Context) (int64, error) {
	return medianConnect(ctx, func(i int) (*pgx.ConnConfig, func(*pgx.Conn) error, error) {
		tenant := i % len(t.dbs)
		cfg, err := t.config(tenant, t.apps+"cost")
		return cfg, func(c *pgx.Conn) error { return checkDatabase(ctx, c, t.dbs[tenant]) }, err
	})
}
