package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/examples/redis/resp"
	"github.com/poolkit/poolkit/pool"
)

// client is a contender set up against one address: op runs one operation
// under ctx, close releases everything.
type client struct {
	op    func(ctx context.Context) error
	close func()
}

// contender is one client library with its configuration.
type contender struct {
	name   string
	server string // "postgres" or "redis"
	setup  string // how it is configured, for the page
	open   func(addr string, maxSize int, deadline time.Duration) (client, error)
}

// The checked pgxmanager's settings: a health check every second, a
// CheckTimeout for it and for Recycle, and an AcquireTimeout below the
// operations' deadline.
const (
	checkedPeriod  = time.Second
	checkedTimeout = 250 * time.Millisecond
)

// contenders are the contenders of the phase, in the order they run.
var contenders = []contender{
	{name: "pgxmanager", server: "postgres", setup: "pgxmanager.NewPool, pool.Config{MaxSize} and the defaults", open: openPgxmanager(false)},
	{name: "pgxmanager checked", server: "postgres",
		setup: fmt.Sprintf("pgxmanager.NewPool with HealthCheckPeriod %v, CheckTimeout %v and AcquireTimeout of half the deadline", checkedPeriod, checkedTimeout),
		open:  openPgxmanager(true)},
	{name: "pgxpool", server: "postgres", setup: "pgxpool with MaxConns and its defaults", open: openPgxpool},
	{name: "database/sql", server: "postgres", setup: "database/sql over pgx's stdlib driver, MaxOpenConns = MaxIdleConns = MaxSize", open: openSQL},
	{name: "poolkit", server: "redis", setup: "resp.NewClient: a pool.Pool of the example's RESP connections, the defaults", open: openResp},
	{name: "go-redis", server: "redis", setup: "go-redis with PoolSize and ContextTimeoutEnabled, its defaults otherwise", open: openGoRedis},
}

// pgQuery is every PostgreSQL operation.
const pgQuery = "SELECT 1"

func openPgxmanager(checked bool) func(string, int, time.Duration) (client, error) {
	return func(addr string, maxSize int, deadline time.Duration) (client, error) {
		cfg := pool.Config{MaxSize: maxSize}
		if checked {
			cfg.HealthCheckPeriod, cfg.CheckTimeout, cfg.AcquireTimeout = checkedPeriod, checkedTimeout, deadline/2
		}
		p, err := pgxmanager.Open(pgDSN(addr), cfg)
		if err != nil {
			return client{}, err
		}
		return client{
			op: func(ctx context.Context) error {
				_, err := p.Exec(ctx, pgQuery)
				return err
			},
			close: func() { closeWithin(p.Close) },
		}, nil
	}
}

func openPgxpool(addr string, maxSize int, _ time.Duration) (client, error) {
	cfg, err := pgxpool.ParseConfig(pgDSN(addr))
	if err != nil {
		return client{}, err
	}
	cfg.MaxConns = int32(maxSize)
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return client{}, err
	}
	return client{
		op: func(ctx context.Context) error {
			_, err := p.Exec(ctx, pgQuery)
			return err
		},
		close: p.Close,
	}, nil
}

func openSQL(addr string, maxSize int, _ time.Duration) (client, error) {
	cc, err := pgx.ParseConfig(pgDSN(addr))
	if err != nil {
		return client{}, err
	}
	db := stdlib.OpenDB(*cc)
	db.SetMaxOpenConns(maxSize)
	db.SetMaxIdleConns(maxSize)
	return client{
		op: func(ctx context.Context) error {
			_, err := db.ExecContext(ctx, pgQuery)
			return err
		},
		close: func() { _ = db.Close() },
	}, nil
}

func openResp(addr string, maxSize int, _ time.Duration) (client, error) {
	c, err := resp.NewClient(resp.Manager{Addr: addr, DialTimeout: 5 * time.Second}, pool.Config{MaxSize: maxSize})
	if err != nil {
		return client{}, err
	}
	return client{op: c.Ping, close: func() { closeWithin(c.Close) }}, nil
}

func openGoRedis(addr string, maxSize int, _ time.Duration) (client, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: maxSize, ContextTimeoutEnabled: true})
	return client{
		op:    func(ctx context.Context) error { return c.Ping(ctx).Err() },
		close: func() { _ = c.Close() },
	}, nil
}

// closeWithin runs a pool's Close, which waits for leases still out, for
// at most two seconds.
func closeWithin(close func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = close(ctx)
}
