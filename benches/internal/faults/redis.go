package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/poolkit/poolkit/benches/internal/localsrv"
	"github.com/poolkit/poolkit/examples/redis/resp"
)

// redisServer is a private redis-server on a port of its own, with nothing
// kept on disk.
type redisServer struct {
	bin, dir, version string
	port              int
	cmd               *exec.Cmd
	exited            chan struct{} // closed when cmd has exited
}

// startRedis starts a redis-server.
func startRedis(ctx context.Context) (*redisServer, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redis-server: %w", localsrv.ErrMissing)
	}
	port, err := localsrv.FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "poolbench-redis-")
	if err != nil {
		return nil, err
	}
	r := &redisServer{bin: bin, dir: dir, port: port}
	if err := r.Start(ctx); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	r.version = r.serverVersion(ctx)
	return r, nil
}

func (r *redisServer) Name() string { return "redis" }

func (r *redisServer) Describe() string {
	return fmt.Sprintf("Redis %s, a private redis-server on 127.0.0.1", r.version)
}

func (r *redisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(r.port) }

// Start runs redis-server and waits until it answers PING.
func (r *redisServer) Start(ctx context.Context) error {
	cmd := exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", r.dir, "--logfile", filepath.Join(r.dir, "log"), "--maxclients", "1000")
	if err := cmd.Start(); err != nil {
		return err
	}
	r.cmd, r.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) { _ = cmd.Wait(); close(exited) }(r.exited)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return localsrv.WaitFor(wctx, r.ping)
}

// admin connects straight to the server, not through the proxies.
func (r *redisServer) admin(ctx context.Context) (*resp.Conn, error) {
	return resp.Manager{Addr: r.Addr(), DialTimeout: time.Second}.Connect(ctx)
}

// do runs one command on a fresh admin connection.
func (r *redisServer) do(ctx context.Context, args ...string) (resp.Reply, error) {
	c, err := r.admin(ctx)
	if err != nil {
		return resp.Reply{}, err
	}
	defer c.Close()
	return c.Do(ctx, args...)
}

func (r *redisServer) ping(ctx context.Context) error {
	rep, err := r.do(ctx, "PING")
	if err == nil && rep.Str != "PONG" {
		err = fmt.Errorf("PING answered %q", rep.Str)
	}
	return err
}

func (r *redisServer) serverVersion(ctx context.Context) string {
	rep, err := r.do(ctx, "INFO", "server")
	if err == nil {
		for _, line := range strings.Split(rep.Str, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				return v
			}
		}
	}
	return "(version unknown)"
}

// KillClients ends every normal client connection but the admin's own.
func (r *redisServer) KillClients(ctx context.Context) (int, error) {
	rep, err := r.do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	return int(rep.Int), err
}

// Stop shuts the server down without saving and waits for it to exit.
func (r *redisServer) Stop(ctx context.Context) error {
	_, err := r.do(ctx, "SHUTDOWN", "NOSAVE")
	if err != nil && !errors.Is(err, resp.ErrBroken) {
		_ = r.cmd.Process.Kill() // SHUTDOWN closes the connection; anything else: make sure
	}
	select {
	case <-r.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Healthy returns nil once the server answers and has no client but the
// admin's.
func (r *redisServer) Healthy(ctx context.Context) error {
	rep, err := r.do(ctx, "INFO", "clients")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(rep.Str, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok && v != "1" {
			return fmt.Errorf("%s clients connected", v)
		}
	}
	return nil
}

func (r *redisServer) Pids() ([]int, error) { return []int{r.cmd.Process.Pid}, nil }

// Close kills the server and removes its directory.
func (r *redisServer) Close() error {
	_ = r.cmd.Process.Kill()
	<-r.exited
	return os.RemoveAll(r.dir)
}
