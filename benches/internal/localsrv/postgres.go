package localsrv

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres is a private PostgreSQL cluster: initdb'd in a temporary
// directory and run by pg_ctl on a port of its own, its socket in that
// directory, with trust authentication for the superuser postgres. Its
// methods may be called from any goroutine, but Start, Stop and Close one
// at a time.
type Postgres struct {
	as       RunAs
	pgCtl    string
	version  string
	dir      string
	data     string
	port     int
	settings []string // -c name=value, after the defaults
}

// StartPostgres initdb's a cluster and starts it, without durability
// (fsync, synchronous_commit and full_page_writes off), listening on
// 127.0.0.1 only, with settings ("max_connections=200") passed to the
// server as -c options. It fails with ErrMissing where initdb or pg_ctl is
// not installed.
func StartPostgres(ctx context.Context, settings ...string) (*Postgres, error) {
	initdb, err := FindBinary("initdb")
	if err != nil {
		return nil, err
	}
	pgCtl, err := FindBinary("pg_ctl")
	if err != nil {
		return nil, err
	}
	as, err := ServerUser()
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := as.Mkdir("", "poolbench-postgres-")
	if err != nil {
		return nil, err
	}
	p := &Postgres{as: as, pgCtl: pgCtl, dir: dir, data: filepath.Join(dir, "data"), port: port, settings: settings}
	if err := Run(as.Command(ctx, initdb, "-D", p.data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")); err != nil {
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

// Addr is the cluster's host:port.
func (p *Postgres) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.port) }

// Version is the server's version, "15.19", or "(version unknown)".
func (p *Postgres) Version() string { return p.version }

// DSN is the connection string of database db as user, with app as its
// application_name.
func (p *Postgres) DSN(user, db, app string) string {
	return "postgres://" + url.PathEscape(user) + "@" + p.Addr() + "/" + url.PathEscape(db) +
		"?sslmode=disable&application_name=" + url.QueryEscape(app)
}

// Start starts the cluster and waits until it accepts connections.
func (p *Postgres) Start(ctx context.Context) error {
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off",
		p.port, p.dir)
	for _, s := range p.settings {
		opts += " -c " + s
	}
	return Run(p.as.Command(ctx, p.pgCtl, "-D", p.data, "-l", filepath.Join(p.dir, "log"), "-o", opts, "-w", "-t", "60", "start"))
}

// Stop is a fast shutdown: sessions are ended, the cluster stops cleanly.
func (p *Postgres) Stop(ctx context.Context) error {
	return Run(p.as.Command(ctx, p.pgCtl, "-D", p.data, "-m", "fast", "-w", "-t", "60", "stop"))
}

// Admin connects as postgres to database postgres, with app as its
// application_name.
func (p *Postgres) Admin(ctx context.Context, app string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, p.DSN("postgres", "postgres", app))
}

func (p *Postgres) serverVersion(ctx context.Context) string {
	c, err := p.Admin(ctx, "poolbench-admin")
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

// Pids are the postmaster's and its children's.
func (p *Postgres) Pids() ([]int, error) {
	b, err := os.ReadFile(filepath.Join(p.data, "postmaster.pid"))
	if err != nil {
		return nil, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		return nil, fmt.Errorf("postmaster.pid: %w", err)
	}
	return append([]int{pid}, Children(pid)...), nil
}

// Close stops the cluster at once and removes it.
func (p *Postgres) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Run(p.as.Command(ctx, p.pgCtl, "-D", p.data, "-m", "immediate", "-w", "stop"))
	if rerr := os.RemoveAll(p.dir); err == nil {
		err = rerr
	}
	return err
}
