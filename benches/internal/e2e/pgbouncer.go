package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/poolkit/poolkit/benches/internal/localsrv"
	"github.com/poolkit/poolkit/benches/internal/workload"
)

// ServerPgbouncer is the Server= element of the cases through PgBouncer.
const ServerPgbouncer = "pgbouncer"

// pgbouncer is a PgBouncer that poolbench started in front of a PostgreSQL
// server, in transaction pooling mode, on a port of its own.
type pgbouncer struct {
	cmd  *exec.Cmd
	dir  string
	port int
	done chan struct{} // closed when cmd has exited
}

// startPgbouncer starts PgBouncer in front of the server of base (a TCP
// host), with a server pool of poolSize connections, and waits until it
// answers through to the server.
func startPgbouncer(ctx context.Context, base *pgx.ConnConfig, poolSize int) (*pgbouncer, error) {
	bin, err := localsrv.FindBinary("pgbouncer")
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(base.Host, "/") {
		return nil, fmt.Errorf("PostgreSQL is reached through a Unix socket; PgBouncer is run in front of a TCP address only")
	}
	as, err := localsrv.ServerUser()
	if err != nil {
		return nil, err
	}
	port, err := localsrv.FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := as.Mkdir("", "poolbench-pgbouncer-")
	if err != nil {
		return nil, err
	}
	b := &pgbouncer{dir: dir, port: port, done: make(chan struct{})}
	if err := b.configure(as, base, poolSize); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	b.cmd = as.Command(context.Background(), bin, filepath.Join(dir, "pgbouncer.ini"))
	if err := b.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	go func() { _ = b.cmd.Wait(); close(b.done) }()
	if err := b.wait(ctx, base); err != nil {
		b.Close()
		return nil, fmt.Errorf("pgbouncer: %w (log: %s)", err, b.logTail())
	}
	return b, nil
}

// configure writes the configuration and the users file, owned by as.
func (b *pgbouncer) configure(as localsrv.RunAs, base *pgx.ConnConfig, poolSize int) error {
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%d

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 1000
ignore_startup_parameters = extra_float_digits
logfile = %s
pidfile = %s
`, base.Host, base.Port, b.port, filepath.Join(b.dir, "users.txt"), poolSize, filepath.Join(b.dir, "log"), filepath.Join(b.dir, "pid"))
	users := fmt.Sprintf("%q \"\"\n", base.User)
	for name, body := range map[string]string{"pgbouncer.ini": ini, "users.txt": users} {
		if err := as.WriteFile(filepath.Join(b.dir, name), []byte(body)); err != nil {
			return err
		}
	}
	return nil
}

// wait returns once a query through PgBouncer answers.
func (b *pgbouncer) wait(ctx context.Context, base *pgx.ConnConfig) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cfg := b.through(base)
	return localsrv.WaitFor(ctx, func(ctx context.Context) error {
		select {
		case <-b.done:
			return fmt.Errorf("exited")
		default:
		}
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		return pgExec(ctx, c)
	})
}

// Addr is PgBouncer's host:port.
func (b *pgbouncer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(b.port)) }

// through is base, reached through PgBouncer, in pgx's simple-protocol
// mode: transaction pooling may give every transaction another server
// connection, so no prepared statement may outlive one.
func (b *pgbouncer) through(base *pgx.ConnConfig) *pgx.ConnConfig {
	cfg := base.Copy()
	cfg.Host, cfg.Port = "127.0.0.1", uint16(b.port)
	cfg.Fallbacks = nil
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	return cfg
}

// logTail is the end of PgBouncer's log, for an error.
func (b *pgbouncer) logTail() string {
	log, _ := os.ReadFile(filepath.Join(b.dir, "log"))
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], " / ")
}

// Close stops PgBouncer and removes its files.
func (b *pgbouncer) Close() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(5 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
	_ = os.RemoveAll(b.dir)
}

// pgbouncerTarget is PostgreSQL through b: pgxmanager's Pool facade and
// pgxpool, in simple-protocol mode, in the pooled phases.
func pgbouncerTarget(b *pgbouncer, dsn, version string, base *pgx.ConnConfig) target {
	adjust := func(cfg *pgx.ConnConfig) {
		t := b.through(cfg)
		*cfg = *t
	}
	return target{
		server:   ServerPgbouncer,
		describe: fmt.Sprintf("PgBouncer at %s in transaction pooling mode, in front of PostgreSQL %s at %s", b.Addr(), version, net.JoinHostPort(base.Host, strconv.Itoa(int(base.Port)))),
		port:     b.port,
		unit:     pgQuery + " over the simple query protocol, through PgBouncer",
		entries: func(ctx context.Context, phase string, maxSize int) []workload.Entry {
			if phase == "nopool" {
				return nil
			}
			return []workload.Entry{facadeEntry(ctx, dsn, maxSize, adjust), pgxpoolEntry(ctx, dsn, maxSize, adjust)}
		},
	}
}
