package pool_test

import (
	"context"
	"fmt"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// A keyed pool of connections to the databases of many tenants on one
// server: two objects at most across all tenants. The third tenant's
// Acquire makes room by closing the idle object of the tenant used longest
// ago.
func ExampleNewKeyed() {
	m := manager.KeyedFuncs[string, string]{
		ConnectFunc: func(_ context.Context, tenant string) (string, error) {
			return "conn to " + tenant, nil
		},
		CloseFunc: func(c string) error { fmt.Println("closed", c); return nil },
	}
	k, err := pool.NewKeyed[string, string](m, pool.KeyedConfig{MaxSize: 2})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for _, tenant := range []string{"acme", "globex", "initech"} {
		l, err := k.Acquire(ctx, tenant)
		if err != nil {
			panic(err)
		}
		fmt.Println(l.Value())
		l.Release()
	}
	s := k.Stats()
	fmt.Println("live:", s.Live, "evicted:", s.ClosedBy[pool.CloseEvict])
	if err := k.Close(ctx); err != nil {
		panic(err)
	}
	// Unordered output:
	// conn to acme
	// conn to globex
	// closed conn to acme
	// conn to initech
	// live: 2 evicted: 1
	// closed conn to globex
	// closed conn to initech
}
