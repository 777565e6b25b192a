package faults

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/poolkit/poolkit/benches/internal/localsrv"
)

// appName names the connections of the phase's clients, so that a kill
// ends theirs and no other.
const appName = "poolbench-faults"

// postgres is the phase's private PostgreSQL cluster (localsrv.Postgres),
// with room for every client of a run.
type postgres struct {
	*localsrv.Postgres
}

// startPostgres initdb's a cluster and starts it.
func startPostgres(ctx context.Context) (*postgres, error) {
	p, err := localsrv.StartPostgres(ctx, "max_connections=200")
	if err != nil {
		return nil, err
	}
	return &postgres{p}, nil
}

func (p *postgres) Name() string { return "postgres" }

func (p *postgres) Describe() string {
	return fmt.Sprintf("PostgreSQL %s, a private cluster on 127.0.0.1", p.Version())
}

// DSN is the connection string of database postgres through addr, with the
// phase's application_name.
func pgDSN(addr string) string {
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable&application_name=" + appName
}

// admin connects straight to the cluster, not through the proxies, as a
// connection the kills leave alone.
func (p *postgres) admin(ctx context.Context) (*pgx.Conn, error) {
	return p.Admin(ctx, "poolbench-admin")
}

// KillClients terminates every backend of the phase's clients.
func (p *postgres) KillClients(ctx context.Context) (int, error) {
	c, err := p.admin(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Close(context.Background())
	var n int
	err = c.QueryRow(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", appName).Scan(&n)
	return n, err
}

// Healthy returns nil once the cluster answers and no client backend is
// left.
func (p *postgres) Healthy(ctx context.Context) error {
	c, err := p.admin(ctx)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", appName).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%d client backends left", n)
	}
	return nil
}
