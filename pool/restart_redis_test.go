package pool_test

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// privateRedis is a redis-server of the test's own, on a port of its own,
// that the test may kill and start again.
type privateRedis struct {
	t    *testing.T
	port int
	cmd  *exec.Cmd
}

// startPrivateRedis starts redis-server on a free local port, or skips the
// test if redis-server is not installed (.ci/run installs it).
func startPrivateRedis(t *testing.T) *privateRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not in PATH (on Debian or Ubuntu: apt-get install redis-server)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	r := &privateRedis{t: t, port: port}
	r.start()
	t.Cleanup(r.kill)
	return r
}

func (r *privateRedis) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// start runs the server and returns once it answers PING.
func (r *privateRedis) start() {
	r.t.Helper()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "no")
	require.NoError(r.t, r.cmd.Start())
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", r.addr(), time.Second)
		if err == nil {
			reply, err := redisCmd(c, "PING")
			c.Close()
			if err == nil && reply == "+PONG" {
				return
			}
		}
		require.True(r.t, time.Now().Before(deadline), "redis-server on port %d did not answer", r.port)
		time.Sleep(5 * time.Millisecond)
	}
}

// kill ends the server at once (SIGKILL: its clients see their connections
// reset) and waits for it to exit.
func (r *privateRedis) kill() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
	r.cmd = nil
}

// restartRun is what a run of restartScenario counted.
type restartRun struct {
	acquires, failedAcquires, failedCommands int64
	connectErrors                            uint64
}

// restartScenario runs 8 goroutines, each acquiring a connection to r and
// sending PING (a connection whose PING fails is destroyed), through a pool
// of 4 with acquireTimeout, while r is killed and started again after each
// of downs.
func restartScenario(t *testing.T, r *privateRedis, acquireTimeout time.Duration, downs []time.Duration) restartRun {
	d := manager.Dialer{Network: "tcp", Address: r.addr()}
	m := manager.Funcs[net.Conn]{ConnectFunc: d.Connect, RecycleFunc: d.Recycle, CloseFunc: d.Close}
	p, err := pool.New[net.Conn](m, pool.Config{MaxSize: 4, AcquireTimeout: acquireTimeout})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close(context.Background())) }()

	var run restartRun
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var acquires, failedAcquires, failedCommands atomic.Int64
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				l, err := p.Acquire(ctx)
				cancel()
				acquires.Add(1)
				if err != nil {
					failedAcquires.Add(1)
					continue
				}
				if reply, err := redisCmd(l.Value(), "PING"); err != nil || reply != "+PONG" {
					failedCommands.Add(1) // the server died under it: not an acquire's failure
					l.Destroy()
					continue
				}
				l.Release()
			}
		})
	}
	settleFor := func() { time.Sleep(200 * time.Millisecond) } // traffic between restarts
	settleFor()
	for _, down := range downs {
		r.kill()
		time.Sleep(down)
		r.start()
		settleFor()
	}
	close(stop)
	wg.Wait()
	run.acquires, run.failedAcquires, run.failedCommands = acquires.Load(), failedAcquires.Load(), failedCommands.Load()
	run.connectErrors = p.Stats().ConnectErrors
	return run
}

// A Redis restart shorter than the caller's deadline fails no Acquire when
// AcquireTimeout is set (DESIGN.md, invariant 27): each Acquire whose
// connect is refused retries until the server is back. Without
// AcquireTimeout the same restarts fail Acquires (logged for comparison).
func TestRedisRestartShorterThanTheDeadlineFailsNoAcquire(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts a private redis-server")
	}
	r := startPrivateRedis(t)
	downs := []time.Duration{30 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	without := restartScenario(t, r, 0, downs)
	with := restartScenario(t, r, 2*time.Second, downs)
	for _, x := range []struct {
		name string
		run  restartRun
	}{{"AcquireTimeout=0 (no retry)", without}, {"AcquireTimeout=2s (retry)", with}} {
		t.Logf("%s: restarts down %v: %d acquires, %d failed; %d PINGs failed on connections the kill reset; %d connect errors",
			x.name, downs, x.run.acquires, x.run.failedAcquires, x.run.failedCommands, x.run.connectErrors)
	}
	require.Zero(t, with.failedAcquires, "a restart shorter than the deadline fails no Acquire")
	require.NotZero(t, with.connectErrors, "the restarts refused connects")
}
