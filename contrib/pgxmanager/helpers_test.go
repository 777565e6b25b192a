package pgxmanager_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/poolkit/poolkit/internal/testutil/itest"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
)

// TestMain says, in one line on standard error, when the integration tests
// skip and how to enable them (a t.Skip message shows only with -v; go test
// shows this line when it runs this package alone, or with -v).
func TestMain(m *testing.M) {
	if os.Getenv(envDSN) == "" {
		fmt.Fprintf(os.Stderr, "pgxmanager: integration tests skipped: set %s (e.g. %s=%s) to run them\n", envDSN, envDSN, exampleDSN)
	}
	goleak.VerifyTestMain(m)
}

// envDSN names the PostgreSQL server of the integration tests; exampleDSN
// is an example value, for the messages.
const (
	envDSN     = "POOLKIT_POSTGRES_DSN"
	exampleDSN = "'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'"
)

// dsn returns $POOLKIT_POSTGRES_DSN, or skips the test saying to set it.
func dsn(t testing.TB) string {
	t.Helper()
	v := os.Getenv(envDSN)
	if v == "" {
		t.Skipf("integration test: set %s (e.g. %s=%s) to run it against a real PostgreSQL", envDSN, envDSN, exampleDSN)
	}
	return v
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// uniqueName returns an application_name unique to this run of the test, at
// most 56 bytes (PostgreSQL truncates past 63; "-admin" still fits).
func uniqueName(t *testing.T) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	suffix := fmt.Sprintf("-%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
	if room := 56 - len("pgxm-") - len(suffix); len(name) > room {
		name = name[len(name)-room:]
	}
	return strings.ToLower("pgxm-" + name + suffix)
}

// config returns the test server's Config with the connections named name.
func config(t *testing.T, name string) pgxmanager.Config {
	t.Helper()
	return configFor(t, dsn(t), name)
}

// configFor returns the Config of the server at conn with the connections
// named name.
func configFor(t *testing.T, conn, name string) pgxmanager.Config {
	t.Helper()
	pc, err := pgxmanager.ParsePoolConfig(conn)
	require.NoError(t, err, "parsing %s", conn)
	pc.ConnConfig.RuntimeParams["application_name"] = name
	return pc.Config
}

// newManager returns a Manager for cfg, failing the test on an error.
func newManager(t *testing.T, cfg pgxmanager.Config) *pgxmanager.Manager {
	t.Helper()
	m, err := pgxmanager.New(cfg)
	require.NoError(t, err)
	return m
}

// ctxFor returns a context that ends with the test or after d.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}

// admin is a plain connection (no pool) that watches and terminates the
// backends of a test.
type admin struct {
	t *testing.T
	c *pgx.Conn
}

func dialAdmin(t *testing.T) *admin {
	t.Helper()
	return dialAdminAt(t, dsn(t))
}

// dialAdminAt is dialAdmin for the server at conn.
func dialAdminAt(t *testing.T, conn string) *admin {
	t.Helper()
	cfg := configFor(t, conn, uniqueName(t)+"-admin")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	require.NoError(t, err, "PostgreSQL at %s does not answer", envDSN)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return &admin{t: t, c: c}
}

// backends returns how many backends are named name, and how many of those
// are idle inside a transaction.
func (a *admin) backends(name string) (n, idleInTx int) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := a.c.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE state LIKE 'idle in transaction%')
		FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&n, &idleInTx)
	require.NoError(a.t, err)
	return n, idleInTx
}

// terminate signals every backend named name to exit and waits until they
// have; it returns how many it signalled.
func (a *admin) terminate(name string) int {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// MATERIALIZED: the filter runs before pg_terminate_backend, which the
	// planner could otherwise call on every backend, the admin's too.
	rows, err := a.c.Query(ctx, `WITH t AS MATERIALIZED (SELECT pid FROM pg_stat_activity WHERE application_name = $1)
		SELECT pid FROM t WHERE pg_terminate_backend(pid)`, name)
	require.NoError(a.t, err)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(a.t, err)
	eventually(a.t, 5*time.Second, func() (bool, string) {
		var left int
		require.NoError(a.t, a.c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)", pids).Scan(&left))
		return left == 0, fmt.Sprintf("%d terminated backends still there", left)
	})
	return len(pids)
}

// eventually polls cond until it holds or timeout passes, then fails the
// test with cond's last message.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	itest.Eventually(t, timeout, cond)
}

// faultConn is a TCP connection whose writes can be made slow, swallowed or
// stalled, to drive pgconn into the states the Manager must cope with. It
// embeds *net.TCPConn, so it is a syscall.Conn and Recycle peeks at it.
type faultConn struct {
	*net.TCPConn
	writes     atomic.Int64 // Write calls
	terminates atomic.Int64 // Terminate messages (a connection's goodbye) written to the socket
	slowWrite  atomic.Int64 // nanoseconds each Write sleeps after writing
	swallow    atomic.Bool  // writes report success and send nothing
	fail       atomic.Bool  // writes send nothing and fail (EPIPE: as after the peer's reset)
	stall      atomic.Bool  // writes wait for the write deadline
	deadlineAt atomic.Int64 // the write deadline, Unix nanoseconds; 0: none
	// readGate, if set, holds every Read until the channel is closed.
	readGate atomic.Pointer[chan struct{}]
	// reading counts the Reads in progress; maxReading, the most at once.
	reading, maxReading atomic.Int32
	closed              chan struct{}                 // closed by Close: a held Read returns
	readDeadline        atomic.Int64                  // Unix nanoseconds; 0: none
	deadlineSet         atomic.Pointer[chan struct{}] // closed when the read deadline changes
	closeOnce           sync.Once
}

func (c *faultConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.TCPConn.Close()
}

func (c *faultConn) Read(p []byte) (int, error) {
	n := c.reading.Add(1)
	defer c.reading.Add(-1)
	for m := c.maxReading.Load(); n > m && !c.maxReading.CompareAndSwap(m, n); m = c.maxReading.Load() {
	}
	for g := c.readGate.Load(); g != nil; g = c.readGate.Load() {
		// Held: until the gate opens, the conn closes, or the read
		// deadline (as pgconn sets it when a context ends) passes.
		kick := c.deadlineSet.Load()
		var timeout <-chan time.Time
		if d := c.readDeadline.Load(); d != 0 {
			wait := time.Until(time.Unix(0, d))
			if wait <= 0 {
				return 0, os.ErrDeadlineExceeded
			}
			timeout = time.After(wait)
		}
		select {
		case <-*g:
		case <-c.closed:
		case <-*kick:
		case <-timeout:
		}
	}
	return c.TCPConn.Read(p)
}

func (c *faultConn) SetReadDeadline(t time.Time) error {
	c.setReadDeadline(t)
	return c.TCPConn.SetReadDeadline(t)
}

// setReadDeadline records the read deadline and wakes a held Read to look
// at it.
func (c *faultConn) setReadDeadline(t time.Time) {
	if t.IsZero() {
		c.readDeadline.Store(0)
	} else {
		c.readDeadline.Store(t.UnixNano())
	}
	kick := make(chan struct{})
	if old := c.deadlineSet.Swap(&kick); old != nil {
		close(*old)
	}
}

// holdReads makes Reads wait until the returned function is called.
func (c *faultConn) holdReads() (release func()) {
	g := make(chan struct{})
	c.readGate.Store(&g)
	return func() {
		c.readGate.Store(nil)
		close(g)
	}
}

func (c *faultConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	switch {
	case c.stall.Load():
		for {
			if d := c.deadlineAt.Load(); d != 0 && time.Now().UnixNano() >= d {
				return 0, os.ErrDeadlineExceeded
			}
			time.Sleep(time.Millisecond)
		}
	case c.swallow.Load():
		return len(p), nil
	case c.fail.Load():
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}
	}
	n, err := c.TCPConn.Write(p)
	if err == nil && bytes.HasSuffix(p, terminateMsg) {
		c.terminates.Add(1)
	}
	if d := c.slowWrite.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	return n, err
}

// terminateMsg is the protocol's Terminate message, the last a client sends.
var terminateMsg = []byte{'X', 0, 0, 0, 4}

func (c *faultConn) SetDeadline(t time.Time) error {
	c.setWriteDeadline(t)
	c.setReadDeadline(t)
	return c.TCPConn.SetDeadline(t)
}

func (c *faultConn) SetWriteDeadline(t time.Time) error {
	c.setWriteDeadline(t)
	return c.TCPConn.SetWriteDeadline(t)
}

func (c *faultConn) setWriteDeadline(t time.Time) {
	if t.IsZero() {
		c.deadlineAt.Store(0)
	} else {
		c.deadlineAt.Store(t.UnixNano())
	}
}

// dialFaulty makes cfg dial faultConns and returns where each goes.
func dialFaulty(cfg pgxmanager.Config) <-chan *faultConn {
	conns := make(chan *faultConn, 16)
	var d net.Dialer
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc, ok := c.(*net.TCPConn)
		if !ok {
			_ = c.Close()
			return nil, fmt.Errorf("faultConn needs TCP, got %T (a Unix socket DSN?)", c)
		}
		fc := &faultConn{TCPConn: tc, closed: make(chan struct{})}
		kick := make(chan struct{})
		fc.deadlineSet.Store(&kick)
		conns <- fc
		return fc, nil
	}
	return conns
}
