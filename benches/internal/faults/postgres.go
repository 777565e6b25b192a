package faults

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/poolkit/poolkit/benches/internal/localsrv"
)

// appName names the connections of the phase's clients, so that a kill
// ends theirs and no other.
const appName = "poolbench-faults"

// postgres is a private PostgreSQL cluster: initdb'd in a temporary
// directory and run by pg_ctl on a port of its own, its socket in that
// directory.
type postgres struct {
	as             localsrv.RunAs
	pgCtl, version string
	dir, data      string
	port           int
}

// startPostgres initdb's a cluster and starts it.
func startPostgres(ctx context.Context) (*postgres, error) {
	initdb, err := localsrv.FindBinary("initdb")
	if err != nil {
		return nil, err
	}
	pgCtl, err := localsrv.FindBinary("pg_ctl")
	if err != nil {
		return nil, err
	}
	as, err := localsrv.ServerUser()
	if err != nil {
		return nil, err
	}
	port, err := localsrv.FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := as.Mkdir("", "poolbench-postgres-")
	if err != nil {
		return nil, err
	}
	p := &postgres{as: as, pgCtl: pgCtl, dir: dir, data: filepath.Join(dir, "data"), port: port}
	if err := localsrv.Run(as.Command(ctx, initdb, "-D", p.data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := p.Start(ctx); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	p.version = p.serverVersion(ctx)
	return p, nil
}

func (p *postgres) Name() string { return "postgres" }

func (p *postgres) Describe() string {
	return fmt.Sprintf("PostgreSQL %s, a private cluster on 127.0.0.1", p.version)
}

func (p *postgres) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

// DSN is the connection string of database postgres through addr, with the
// phase's application_name.
func pgDSN(addr string) string {
	return "postgres://postgres@" + addr + "/postgres?sslmode=disable&application_name=" + appName
}

// Start starts the cluster and waits until it accepts connections.
func (p *postgres) Start(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
		p.port, p.dir)
	return localsrv.Run(p.as.Command(ctx, p.pgCtl, "-D", p.data, "-l", filepath.Join(p.dir, "log"), "-o", opts, "-w", "-t", "60", "start"))
}

// Stop is a fast shutdown: sessions are ended, the cluster stops cleanly.
func (p *postgres) Stop(ctx context.Context) error {
	return localsrv.Run(p.as.Command(ctx, p.pgCtl, "-D", p.data, "-m", "fast", "-w", "-t", "60", "stop"))
}

// admin connects straight to the cluster, not through the proxies, as a
// connection the kills leave alone.
func (p *postgres) admin(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, "postgres://postgres@"+p.Addr()+"/postgres?sslmode=disable&application_name=poolbench-admin")
}

func (p *postgres) serverVersion(ctx context.Context) string {
	c, err := p.admin(ctx)
	if err != nil {
		return "(version unknown)"
	}
	defer c.Close(context.Background())
	v := c.PgConn().ParameterStatus("server_version")
	if i := strings.IndexByte(v, ' '); i > 0 {
		v = v[:i]
	}
	return v
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

// Pids are the postmaster's and its children's.
func (p *postgres) Pids() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(p.data, "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return nil, fmt.Errorf("postmaster.pid: %w", err)
	}
	return append([]int{pid}, localsrv.Children(pid)...), nil
}

// Close stops the cluster at once and removes it.
func (p *postgres) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := localsrv.Run(p.as.Command(ctx, p.pgCtl, "-D", p.data, "-m", "immediate", "-w", "stop"))
	if rerr := os.RemoveAll(p.dir); err == nil {
		err = rerr
	}
	return err
}
