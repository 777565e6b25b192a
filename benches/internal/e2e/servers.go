package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/poolkit/poolkit/benches/internal/workload"
	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/examples/redis/resp"
	"github.com/poolkit/poolkit/examples/tcp/echo"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// dialTimeout bounds each dial of the echo and Redis contenders.
const dialTimeout = 5 * time.Second

// ---- echo ----

// echoLine is what an echo request writes and reads back.
var echoLine = []byte("poolbench e2e: a line to echo\n")

// echoTarget pools net.Conn connections made by manager.Dialer (Recycle: a
// non-blocking peek at the socket) to the in-process echo server.
func echoTarget(srv *echo.Server) target {
	d := manager.Dialer{Network: srv.Network(), Address: srv.Addr()}
	k := conns[net.Conn]{
		manager: func(n *atomic.Int64) manager.Manager[net.Conn] {
			return counting[net.Conn]{Manager: d, n: n}
		},
		request: func() func(context.Context, net.Conn) error {
			buf := make([]byte, len(echoLine))
			return func(_ context.Context, c net.Conn) error {
				if _, err := c.Write(echoLine); err != nil {
					return err
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					return err
				}
				if !bytes.Equal(buf, echoLine) {
					return fmt.Errorf("%w: echo %q", errUnexpected, buf)
				}
				return nil
			}
		},
		// Whatever failed, the stream's state is unknown.
		broken: func(net.Conn, error) bool { return true },
	}
	return target{
		server:   ServerEcho,
		describe: fmt.Sprintf("the echo server of examples/tcp/echo at %s, in the same process as the clients", srv.Addr()),
		port:     portOf(srv.Addr()),
		unit:     fmt.Sprintf("a %d-byte line written and read back", len(echoLine)),
		entries: func(ctx context.Context, phase string, maxSize int) []workload.Entry {
			return phaseEntries(ctx, k, phase, maxSize)
		},
	}
}

// ---- Redis ----

// redisTarget pools *resp.Conn connections made by the example's
// resp.Manager (Recycle: a peek, and a PING after a second idle); a request
// is a PING. It fails if the server does not answer a PING.
func redisTarget(ctx context.Context, addr string) (target, error) {
	version, err := probeRedis(ctx, addr)
	if err != nil {
		return target{}, fmt.Errorf("%s: %w", addr, err)
	}
	m := resp.Manager{Addr: addr, DialTimeout: dialTimeout}
	k := conns[*resp.Conn]{
		manager: func(n *atomic.Int64) manager.Manager[*resp.Conn] {
			return counting[*resp.Conn]{Manager: m, n: n}
		},
		request: func() func(context.Context, *resp.Conn) error {
			return func(ctx context.Context, c *resp.Conn) error {
				r, err := c.Do(ctx, "PING")
				if err != nil {
					return err
				}
				if r.Str != "PONG" {
					return fmt.Errorf("%w: PING answered %q", errUnexpected, r.Str)
				}
				return nil
			}
		},
		broken: func(c *resp.Conn, _ error) bool { return c.Broken() },
	}
	return target{
		server:   ServerRedis,
		describe: fmt.Sprintf("Redis %s at %s", version, addr),
		port:     portOf(addr),
		unit:     "a PING and its PONG",
		entries: func(ctx context.Context, phase string, maxSize int) []workload.Entry {
			return phaseEntries(ctx, k, phase, maxSize)
		},
	}, nil
}

// probeRedis checks that the server answers PING and returns its version.
func probeRedis(ctx context.Context, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c, err := resp.Manager{Addr: addr}.Connect(ctx)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if r, err := c.Do(ctx, "PING"); err != nil || r.Str != "PONG" {
		return "", fmt.Errorf("PING: %q, %v", r.Str, err)
	}
	r, err := c.Do(ctx, "INFO", "server")
	if err != nil {
		return "unknown version", nil
	}
	for _, line := range strings.Split(r.Str, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "unknown version", nil
}

// ---- PostgreSQL ----

// pgQuery is the request of every PostgreSQL contender; with no arguments,
// pgx runs it over the simple query protocol.
const pgQuery = "SELECT 1"

// countDials wraps a pgconn.DialFunc to count the connections it makes.
func countDials(dial pgconn.DialFunc, n *atomic.Int64) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err == nil {
			n.Add(1)
		}
		return c, err
	}
}

// pgExec runs pgQuery on c as pgxpool's and the facade's Exec do.
func pgExec(ctx context.Context, c *pgx.Conn) error {
	_, err := c.Exec(ctx, pgQuery)
	return err
}

// pgxManager returns a pgxmanager.Manager for dsn with its defaults, the
// connections named and counted in dials.
func pgxManager(dsn string, dials *atomic.Int64, adjust func(*pgx.ConnConfig)) (*pgxmanager.Manager, error) {
	cc, err := pgxConfig(dsn, dials, adjust)
	if err != nil {
		return nil, err
	}
	return pgxmanager.New(pgxmanager.Config{ConnConfig: cc})
}

// postgresTarget pools *pgx.Conn connections made by pgxmanager.Manager
// (Recycle: state checks, a peek, and a ping after a second idle; a release
// check), beside pgxmanager's Pool facade, pgxpool and database/sql; a
// request is SELECT 1. Connections are counted where they are dialled
// (pgconn's DialFunc), for every contender. It fails if the server does not
// answer. It also returns the parsed dsn and the server's version.
func postgresTarget(ctx context.Context, dsn string) (target, *pgx.ConnConfig, string, error) {
	base, err := pgx.ParseConfig(dsn)
	if err != nil {
		return target{}, nil, "", fmt.Errorf("%s: %w", Redact(dsn), err)
	}
	version, err := probePostgres(ctx, base)
	if err != nil {
		return target{}, nil, "", fmt.Errorf("%s: %w", Redact(dsn), err)
	}
	k := conns[*pgx.Conn]{
		manager: func(n *atomic.Int64) manager.Manager[*pgx.Conn] {
			m, err := pgxManager(dsn, n, nil)
			if err != nil { // dsn parsed above: cannot happen
				panic("e2e: bug: " + err.Error())
			}
			return m
		},
		request: func() func(context.Context, *pgx.Conn) error { return pgExec },
		broken:  func(c *pgx.Conn, _ error) bool { return c.IsClosed() },
	}
	port := 0
	where := "a Unix socket"
	if !strings.HasPrefix(base.Host, "/") {
		port = int(base.Port)
		where = net.JoinHostPort(base.Host, fmt.Sprint(base.Port))
	}
	t := target{
		server:   ServerPostgres,
		describe: fmt.Sprintf("PostgreSQL %s at %s, database %s", version, where, base.Database),
		port:     port,
		unit:     pgQuery + " over the simple query protocol, its result read",
		entries: func(ctx context.Context, phase string, maxSize int) []workload.Entry {
			return phaseEntries(ctx, k, phase, maxSize,
				facadeEntry(ctx, dsn, maxSize, nil), pgxpoolEntry(ctx, dsn, maxSize, nil), sqlEntry(ctx, dsn, maxSize))
		},
	}
	return t, base, version, nil
}

// probePostgres connects with cfg, runs the query and returns the server's
// version.
func probePostgres(ctx context.Context, cfg *pgx.ConnConfig) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer c.Close(context.Background())
	if err := pgExec(ctx, c); err != nil {
		return "", err
	}
	v := c.PgConn().ParameterStatus("server_version")
	if i := strings.IndexByte(v, ' '); i > 0 {
		v = v[:i] // "16.4 (Debian 16.4-1.pgdg120+1)"
	}
	if v == "" {
		v = "(unknown version)"
	}
	return v, nil
}

// facadeEntry is pgxmanager's Pool facade with MaxSize maxSize and the
// Manager's defaults (a ping for a connection idle a second or more, as
// pgxpool), its connection config changed by adjust if not nil. An op is
// Pool.Exec: acquire, Exec, release, as pgxpool's.
func facadeEntry(ctx context.Context, dsn string, maxSize int, adjust func(*pgx.ConnConfig)) workload.Entry {
	return workload.Entry{Name: namePgxmanager, Key: "Impl=pgxmanager", Setup: func() (workload.Instance, error) {
		var dials atomic.Int64
		m, err := pgxManager(dsn, &dials, adjust)
		if err != nil {
			return workload.Instance{}, err
		}
		pp, err := pool.New[*pgx.Conn](m, pool.Config{MaxSize: maxSize})
		if err != nil {
			return workload.Instance{}, err
		}
		p := pgxmanager.NewPool(pp, pgxmanager.Options{})
		return workload.Instance{
			Worker: func(int) workload.Op {
				return func() error {
					_, err := p.Exec(ctx, pgQuery)
					return err
				}
			},
			Close: func() { _ = p.Close(context.Background()) },
			Dials: dials.Load,
		}, nil
	}}
}

// pgxConfig is dsn parsed for pgx, changed by adjust if not nil, with the
// connections named and counted.
func pgxConfig(dsn string, n *atomic.Int64, adjust func(*pgx.ConnConfig)) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if adjust != nil {
		adjust(cfg)
	}
	cfg.RuntimeParams["application_name"] = applicationName
	cfg.DialFunc = countDials(cfg.DialFunc, n)
	return cfg, nil
}

// pgxpoolEntry is pgxpool with MaxConns maxSize and its defaults otherwise
// (it pings a connection idle for more than a second before handing it out),
// its connection config changed by adjust if not nil. An op is Pool.Exec:
// acquire, Exec, release.
func pgxpoolEntry(ctx context.Context, dsn string, maxSize int, adjust func(*pgx.ConnConfig)) workload.Entry {
	return workload.Entry{Name: namePgxpool, Key: "Impl=pgxpool", Setup: func() (workload.Instance, error) {
		var dials atomic.Int64
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return workload.Instance{}, err
		}
		cc, err := pgxConfig(dsn, &dials, adjust)
		if err != nil {
			return workload.Instance{}, err
		}
		cfg.ConnConfig = cc
		cfg.MaxConns = int32(maxSize)
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return workload.Instance{}, err
		}
		return workload.Instance{
			Worker: func(int) workload.Op {
				return func() error {
					_, err := p.Exec(ctx, pgQuery)
					return err
				}
			},
			Close: p.Close,
			Dials: dials.Load,
		}, nil
	}}
}

// sqlEntry is database/sql over pgx's stdlib driver with MaxOpenConns and
// MaxIdleConns maxSize (the idle default, 2, would close and redial most
// connections). An op is DB.ExecContext.
func sqlEntry(ctx context.Context, dsn string, maxSize int) workload.Entry {
	return workload.Entry{Name: nameSQL, Key: "Impl=sql", Setup: func() (workload.Instance, error) {
		var dials atomic.Int64
		cc, err := pgxConfig(dsn, &dials, nil)
		if err != nil {
			return workload.Instance{}, err
		}
		db := stdlib.OpenDB(*cc)
		db.SetMaxOpenConns(maxSize)
		db.SetMaxIdleConns(maxSize)
		return workload.Instance{
			Worker: func(int) workload.Op {
				return func() error {
					_, err := db.ExecContext(ctx, pgQuery)
					return err
				}
			},
			Close: func() { _ = db.Close() },
			Dials: dials.Load,
		}, nil
	}}
}
