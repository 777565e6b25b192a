package pgxmanager_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// startPgBouncer starts a PgBouncer of the test's own in transaction
// pooling mode, on a port of its own, in front of the PostgreSQL at
// upstream, with serverConns server connections per database and user; it
// returns the connection string of upstream's database through it. It
// stops with the test, and skips it where pgbouncer is not installed.
func startPgBouncer(t *testing.T, upstream string, serverConns int) string {
	t.Helper()
	bin := findBinary(t, "pgbouncer", "/usr/sbin", "/usr/local/sbin", "/usr/local/bin")
	up, err := pgconn.ParseConfig(upstream)
	require.NoError(t, err)
	cred := serverUser(t)
	dir := serverDir(t, cred)
	port := freePort(t)
	ini := fmt.Sprintf(`[databases]
%s = host=%s port=%d dbname=%s user=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 500
server_lifetime = 3600
logfile = %s
pidfile = %s
`, up.Database, up.Host, up.Port, up.Database, up.User, port, filepath.Join(dir, "userlist.txt"),
		serverConns, filepath.Join(dir, "pgbouncer.log"), filepath.Join(dir, "pgbouncer.pid"))
	files := map[string]string{
		"pgbouncer.ini": ini,
		"userlist.txt":  strconv.Quote(up.User) + ` ""` + "\n",
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		if cred != nil {
			require.NoError(t, os.Chown(path, int(cred.Uid), int(cred.Gid)))
		}
	}
	cmd := exec.Command(bin, filepath.Join(dir, "pgbouncer.ini"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	waitReady(t, addr)
	return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", up.User, addr, up.Database)
}

// The query exec modes that work without server-side prepared statements,
// which PgBouncer's transaction pooling cannot keep (a later transaction
// may run on another server connection; PgBouncer 1.21 and later can
// track protocol-level prepared statements with max_prepared_statements,
// older ones cannot).
var bouncerModes = []pgx.QueryExecMode{pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeCacheDescribe}

// bouncerPool returns a facade through the PgBouncer at conn with the
// query exec mode mode.
func bouncerPool(t *testing.T, conn string, mode pgx.QueryExecMode, maxSize int) *pgxmanager.Pool {
	t.Helper()
	cfg, err := pgxmanager.ParsePoolConfig(conn)
	require.NoError(t, err)
	cfg.ConnConfig.DefaultQueryExecMode = mode
	cfg.ConnConfig.RuntimeParams["application_name"] = uniqueName(t)
	cfg.Pool.MaxSize = maxSize
	cfg.Pool.AcquireTimeout = 20 * time.Second
	return openConfig(t, cfg)
}

// Through PgBouncer in transaction pooling mode, with more clients than
// server connections (so that consecutive transactions of a client run on
// different server connections), every query method of the facade works in
// each exec mode that needs no server-side prepared statement: many
// goroutines, each checking its results.
func TestFacadeBehindPgBouncer(t *testing.T) {
	conn := startPgBouncer(t, dsn(t), 2)
	for _, mode := range bouncerModes {
		t.Run(mode.String(), func(t *testing.T) {
			p := bouncerPool(t, conn, mode, 8)
			ctx := ctxFor(t, 60*time.Second)
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Go(func() {
					for i := range 25 {
						if err := bouncerRound(ctx, p, g*1000+i); err != nil {
							t.Errorf("goroutine %d, round %d: %v", g, i, err)
							return
						}
					}
				})
			}
			wg.Wait()
			testPoolMethods(t, ctx, p)
			s := p.Stats()
			assert.Zero(t, s.ClosedBy[pool.CloseReleaseCheck], "a connection came back in a bad state")
			assert.Zero(t, s.ClosedBy[pool.CloseRecycle], "a connection failed its check")
		})
	}
}

// bouncerRound runs each kind of call once and checks its answers.
func bouncerRound(ctx context.Context, p *pgxmanager.Pool, n int) error {
	var got int
	if err := p.QueryRow(ctx, "SELECT $1::int + 1", n).Scan(&got); err != nil || got != n+1 {
		return fmt.Errorf("QueryRow: %d, %v", got, err)
	}
	rows, err := p.Query(ctx, "SELECT g FROM generate_series(1, $1::int) g", 5)
	if err != nil {
		return fmt.Errorf("Query: %w", err)
	}
	ns, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(ns) != 5 {
		return fmt.Errorf("Query: %v, %v", ns, err)
	}
	if _, err := p.Exec(ctx, "SELECT $1::text", "x"); err != nil {
		return fmt.Errorf("Exec: %w", err)
	}
	// A transaction stays on one server connection: its temporary table
	// is there for each statement, and gone after it.
	err = pgx.BeginFunc(ctx, p, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "CREATE TEMP TABLE pgxm_bouncer (n int4) ON COMMIT DROP"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "INSERT INTO pgxm_bouncer VALUES ($1)", n); err != nil {
			return err
		}
		var back int
		if err := tx.QueryRow(ctx, "SELECT n FROM pgxm_bouncer").Scan(&back); err != nil || back != n {
			return fmt.Errorf("read back %d, %v", back, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("transaction: %w", err)
	}
	b := &pgx.Batch{}
	b.Queue("SELECT $1::int", n)
	b.Queue("SELECT $1::int * 2", n)
	br := p.SendBatch(ctx, b)
	var x, y int
	err1 := br.QueryRow().Scan(&x)
	err2 := br.QueryRow().Scan(&y)
	if err := br.Close(); err1 != nil || err2 != nil || err != nil || x != n || y != 2*n {
		return fmt.Errorf("SendBatch: %d %d, %v %v %v", x, y, err1, err2, err)
	}
	return p.Ping(ctx)
}

// pgx's default exec mode prepares named statements on the server, which
// transaction pooling loses: through PgBouncer a statement prepared in one
// transaction is missing in the next when that runs on another server
// connection. (This is why the modes above are needed; the test shows the
// setting matters.)
func TestPgBouncerLosesPreparedStatements(t *testing.T) {
	conn := startPgBouncer(t, dsn(t), 2)
	p := bouncerPool(t, conn, pgx.QueryExecModeCacheStatement, 1)
	ctx := ctxFor(t, 30*time.Second)
	const q = "SELECT pg_backend_pid()"
	var first uint32
	require.NoError(t, p.QueryRow(ctx, q).Scan(&first), "prepares the statement on one server connection")

	// Another client takes that server connection (PgBouncer hands out the
	// one used last), so that the pool's next transaction runs on the
	// other.
	other, err := pgx.Connect(ctx, conn)
	require.NoError(t, err)
	defer other.Close(context.Background())
	tx, err := other.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.Background())
	var held uint32
	require.NoError(t, tx.QueryRow(ctx, q, pgx.QueryExecModeSimpleProtocol).Scan(&held))
	require.Equal(t, first, held, "PgBouncer gave the other client another server connection")

	var n uint32
	err = p.QueryRow(ctx, q).Scan(&n)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr, "a named prepared statement survived transaction pooling")
	assert.Equal(t, "26000", pgErr.Code, "prepared statement does not exist: %v", err)
}
