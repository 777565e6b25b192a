package pgxmanager_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// A pool of pgx connections, used as a pgxpool.Pool would be. (It needs a
// server, so it is compiled, not run.)
func Example() {
	ctx := context.Background()
	p, err := pgxmanager.Open(os.Getenv("POOLKIT_POSTGRES_DSN"), pool.Config{MaxSize: 16})
	if err != nil {
		panic(err)
	}
	defer p.Close(ctx)

	var greeting string
	if err := p.QueryRow(ctx, "SELECT 'hello, ' || $1", "world").Scan(&greeting); err != nil {
		panic(err)
	}
	fmt.Println(greeting)
}

// A Manager with session settings made on each new connection, and a
// tighter ping policy than the default.
func ExampleNew() {
	pc, err := pgxmanager.ParsePoolConfig(os.Getenv("POOLKIT_POSTGRES_DSN"))
	if err != nil {
		panic(err)
	}
	cfg := pc.Config // the Manager's part
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, "SET statement_timeout = '5s'")
		return err
	}
	cfg.PingAfter = 30 * time.Second   // ping a connection idle this long before reuse
	cfg.PingTimeout = 2 * time.Second  // and give up on it after this
	cfg.CloseTimeout = 1 * time.Second // the most Close waits for the server's goodbye
	m, err := pgxmanager.New(cfg)
	if err != nil {
		panic(err)
	}
	pp, err := pool.New[*pgx.Conn](m, pool.Config{MaxSize: 8, MinIdle: 2, MaxIdleTime: 5 * time.Minute})
	if err != nil {
		panic(err)
	}
	p := pgxmanager.NewPool(pp, pgxmanager.Options{})
	defer p.Close(context.Background())
}

// A pool configured as a pgxpool.Config would be: pgxpool's defaults and
// pool_* parameters (pool_max_conns=8, say) from the connection string,
// hooks beside the pool's sizes. (It needs a server, so it is compiled, not
// run.)
func ExampleOpenConfig() {
	cfg, err := pgxmanager.ParsePoolConfig(os.Getenv("POOLKIT_POSTGRES_DSN"))
	if err != nil {
		panic(err)
	}
	cfg.BeforeConnect = func(ctx context.Context, cc *pgx.ConnConfig) error {
		cc.Password = os.Getenv("PGPASSWORD") // a rotated secret, read at each connect
		return nil
	}
	cfg.PrepareConn = func(ctx context.Context, c *pgx.Conn) (bool, error) {
		return c.PgConn().TxStatus() == 'I', nil // false: destroy it and take another
	}
	cfg.Pool.MinIdle = 2
	p, err := pgxmanager.OpenConfig(cfg)
	if err != nil {
		panic(err)
	}
	defer p.Close(context.Background())
	fmt.Println(p.Stat().MaxConns())
}
