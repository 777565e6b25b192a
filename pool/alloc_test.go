package pool_test

import (
	"context"
	"github.com/poolkit/poolkit/exchange"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/pool"
)

// Acquire+Release of an idle object allocates nothing, with a cancellable
// context (whose Done channel would be allocated by a ctx.Done() call) and
// with expiry configured. It holds in the race and poolkit_nolinkname builds
// too.
func TestAcquireReleaseZeroAllocs(t *testing.T) {
	for _, cfg := range []pool.Config{
		{MaxSize: 4},
		{MaxSize: 4, MaxIdleTime: 1 << 40, MaxLifetime: 1 << 40, MaxUses: 1 << 40, AcquireTimeout: 1 << 40},
		pool.WithLocalDepth(pool.Config{MaxSize: 4, Exchange: exchange.KindMutex}, 1),
		// Options that leave the fast paths alone, or send both to the
		// slow paths (MaxIdle; an Observer, here one that does nothing).
		{MaxSize: 4, HealthCheckPeriod: time.Hour, MaxIdle: 4},
		{MaxSize: 4, Observer: pool.NopObserver{}},
	} {
		p := newPool(t, &fakeMgr{}, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		acquire(t, p).Release()
		allocs := testing.AllocsPerRun(1000, func() {
			l, err := p.Acquire(ctx)
			if err != nil {
				panic(err)
			}
			_ = l.Value()
			l.Release()
		})
		cancel()
		require.Zero(t, allocs, "%+v", cfg)
	}
	_ = runtime.GOMAXPROCS(0)
}
