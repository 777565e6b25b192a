package pool_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/internal/testutil/pooltest"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// envRedisAddr names the Redis server of the integration tests.
const envRedisAddr = "POOLKIT_REDIS_ADDR"

// redisAddr returns $POOLKIT_REDIS_ADDR, or skips the test saying to set it
// (TestMain says so on standard error too).
func redisAddr(t *testing.T) string {
	t.Helper()
	v := os.Getenv(envRedisAddr)
	if v == "" {
		t.Skipf("integration test: set %s (e.g. %s=127.0.0.1:6379) to run it against a real Redis", envRedisAddr, envRedisAddr)
	}
	return v
}

// redisCmd sends one command in RESP and returns the first line of the
// reply.
func redisCmd(c net.Conn, args ...string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// With health checks on, a pool whose every server connection was killed
// (CLIENT KILL of each) hands out no dead connection once a period has
// passed: the checks (manager.Dialer's Recycle, which sees the closed socket)
// close them, and the maintainer connects replacements up to MinIdle. The
// acquire path's own check would not catch them: a connection never handed
// out is not recycled before its first use.
func TestHealthChecksReplaceKilledRedisConnections(t *testing.T) {
	addr := redisAddr(t)
	d := manager.Dialer{Network: "tcp", Address: addr}
	var mu sync.Mutex
	var locals []string // the pool's connections, as the server names them
	m := manager.Funcs[net.Conn]{
		ConnectFunc: func(ctx context.Context) (net.Conn, error) {
			c, err := d.Connect(ctx)
			if err == nil {
				mu.Lock()
				locals = append(locals, c.LocalAddr().String())
				mu.Unlock()
			}
			return c, err
		},
		RecycleFunc: d.Recycle,
		CloseFunc:   d.Close,
	}
	const n = 4
	w := pooltest.NewEvents()
	p, err := pool.New[net.Conn](m, pool.Config{MaxSize: n, MinIdle: n, HealthCheckPeriod: 50 * time.Millisecond, Observer: w})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Warm(ctx), "Redis at %s does not answer", envRedisAddr)
	w.AwaitConnects(ctx, t, n) // Warm's

	admin, err := d.Connect(ctx)
	require.NoError(t, err)
	defer admin.Close()
	mu.Lock()
	killed := append([]string(nil), locals...)
	mu.Unlock()
	require.Len(t, killed, n)
	for _, a := range killed {
		reply, err := redisCmd(admin, "CLIENT", "KILL", "ADDR", a)
		require.NoError(t, err)
		require.Equal(t, ":1", reply, "CLIENT KILL ADDR %s kills one client", a)
	}

	// The health checks close every killed connection, and the maintainer
	// connects a replacement for each.
	w.AwaitHealthCloses(ctx, t, n)
	w.AwaitConnects(ctx, t, n)
	require.Equal(t, uint64(n), p.Stats().ClosedBy[pool.CloseHealthCheck])
	var ls []pool.Lease[net.Conn]
	for range n {
		l, err := p.Acquire(ctx)
		require.NoError(t, err)
		require.NotContains(t, killed, l.Value().LocalAddr().String(), "a killed connection was handed out")
		reply, err := redisCmd(l.Value(), "PING")
		require.NoError(t, err)
		require.Equal(t, "+PONG", reply)
		ls = append(ls, l)
	}
	for _, l := range ls {
		l.Release()
	}
	require.Zero(t, p.Stats().ClosedBy[pool.CloseRecycle], "the health checks, not the acquires, found them")
}
