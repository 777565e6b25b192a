package keyed

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/poolkit/poolkit/benches/internal/localsrv"
	"github.com/poolkit/poolkit/benches/internal/results"
)

// Names on the case's server.
const (
	// tenantRole is the clients' role: not a superuser, so that the
	// server's reserved connections stay out of their reach.
	tenantRole = "poolbench_tenant"
	// appName is the clients' application_name.
	appName = "poolbench-keyed"
	// template is the database every tenant's is copied from.
	template = "tenant_template"
)

// server is the case's private PostgreSQL cluster and its tenants.
type server struct {
	pg      *localsrv.Postgres
	tenants []string                   // database names, by tenant
	configs map[string]*pgx.ConnConfig // by database name; read-only once made
}

// tenantName is the database of tenant i.
func tenantName(i int) string { return fmt.Sprintf("tenant_%03d", i) }

// startServer starts a cluster with st's max_connections and reserved
// connections, the clients' role, and n tenant databases, each with a
// table item of one row that the role may read.
func startServer(ctx context.Context, st results.KeyedSettings, n int) (*server, error) {
	pg, err := localsrv.StartPostgres(ctx,
		"max_connections="+strconv.Itoa(st.MaxConnections),
		"superuser_reserved_connections="+strconv.Itoa(st.SuperuserReserved))
	if err != nil {
		return nil, err
	}
	s := &server{pg: pg, configs: map[string]*pgx.ConnConfig{}}
	if err := s.createTenants(ctx, n); err != nil {
		_ = pg.Close()
		return nil, fmt.Errorf("creating the tenants: %w", err)
	}
	return s, nil
}

// createTenants makes the role, the template and n copies of it.
func (s *server) createTenants(ctx context.Context, n int) error {
	admin, err := s.pg.Admin(ctx, "poolbench-admin")
	if err != nil {
		return err
	}
	defer admin.Close(context.Background())
	for _, q := range []string{"CREATE ROLE " + tenantRole + " LOGIN", "CREATE DATABASE " + template} {
		if _, err := admin.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	tc, err := pgx.Connect(ctx, s.pg.DSN("postgres", template, "poolbench-admin"))
	if err != nil {
		return err
	}
	_, err = tc.Exec(ctx, "CREATE TABLE item (id int PRIMARY KEY, v text NOT NULL); INSERT INTO item VALUES (1, 'one'); GRANT SELECT ON item TO "+tenantRole)
	// A template cannot be copied while anyone is connected to it.
	if cerr := tc.Close(context.Background()); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	for i := range n {
		name := tenantName(i)
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template); err != nil {
			return fmt.Errorf("CREATE DATABASE %s: %w", name, err)
		}
		cfg, err := pgx.ParseConfig(s.pg.DSN(tenantRole, name, appName))
		if err != nil {
			return err
		}
		s.tenants = append(s.tenants, name)
		s.configs[name] = cfg
	}
	return nil
}

// describe says what the server is.
func (s *server) describe() string {
	return fmt.Sprintf("PostgreSQL %s, a private cluster on 127.0.0.1", s.pg.Version())
}

// dsn is the connection string of tenant i as the clients' role.
func (s *server) dsn(i int) string { return s.pg.DSN(tenantRole, s.tenants[i], appName) }

// connectCost is the median time of connectSamples connects to tenants'
// databases, one after the other, each with its first query.
func (s *server) connectCost(ctx context.Context, sleep time.Duration) (int64, error) {
	sql := querySQL(sleep)
	return medianConnect(ctx, func(i int) (*pgx.ConnConfig, func(*pgx.Conn) error, error) {
		db := s.tenants[i%len(s.tenants)]
		return s.configs[db], func(c *pgx.Conn) error { return query(ctx, c, sql, db) }, nil
	})
}

// medianConnect is the median time of connectSamples connects, one after
// the other, each with its first use: next(i) gives connect i's
// configuration and use.
func medianConnect(ctx context.Context, next func(i int) (*pgx.ConnConfig, func(*pgx.Conn) error, error)) (int64, error) {
	var took []float64
	for i := range connectSamples {
		cfg, use, err := next(i)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return 0, err
		}
		err = use(c)
		took = append(took, float64(time.Since(start)))
		if cerr := c.Close(context.Background()); err == nil {
			err = cerr
		}
		if err != nil {
			return 0, err
		}
	}
	return int64(results.Median(took)), nil
}

// connectSamples is how many connects connectCost times.
const connectSamples = 9

// countQuery counts the server's client connections but the one asking.
const countQuery = "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"

// settle waits, at most 30 s, until no client connection is left.
func (s *server) settle(ctx context.Context) error {
	admin, err := s.pg.Admin(ctx, "poolbench-admin")
	if err != nil {
		return err
	}
	return settleOn(ctx, admin, countQuery)
}

// settleOn waits, at most 30 s, until query, a count of connections run on
// admin, says none is left; it closes admin.
func settleOn(ctx context.Context, admin *pgx.Conn, query string, args ...any) error {
	defer admin.Close(context.Background())
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return localsrv.WaitFor(ctx, func(ctx context.Context) error {
		var n int
		if err := admin.QueryRow(ctx, query, args...).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%d client connections left", n)
		}
		return nil
	})
}

// close stops the cluster and removes it.
func (s *server) close() error { return s.pg.Close() }
