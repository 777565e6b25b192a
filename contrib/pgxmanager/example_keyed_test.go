package pgxmanager_test

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// A pool for many tenants, each with a database of its own, under one
// budget of 20 connections to the server (at most 5 for one tenant).
// Each tenant's configuration is parsed once, at its first connect. (It
// needs a server, so it is compiled, not run.)
func ExampleOpenKeyed() {
	base, err := pgx.ParseConfig(os.Getenv("POOLKIT_POSTGRES_DSN"))
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	configs := map[string]*pgx.ConnConfig{}
	configFor := func(_ context.Context, tenant string) (*pgx.ConnConfig, error) {
		mu.Lock()
		defer mu.Unlock()
		cc, ok := configs[tenant]
		if !ok {
			cc = base.Copy()
			cc.Database = "tenant_" + tenant
			configs[tenant] = cc
		}
		return cc, nil
	}
	kp, err := pgxmanager.OpenKeyed(configFor, pool.KeyedConfig{MaxSize: 20, MaxSizePerKey: 5})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	defer kp.Close(ctx)

	// For returns a tenant's Pool: the query methods (sqlc's DBTX) on the
	// tenant's connections, and the tenant's statistics.
	db := kp.For("acme")
	var name string
	if err := db.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
		panic(err)
	}
	fmt.Println(name)
	fmt.Println(db.Stat().IdleConns(), "idle of", kp.Stat().TotalConns())
}
