package pool_test

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/pool"
)

// Fairness between goroutines that contend for a pool (DESIGN.md, Release,
// invariant 23).

// TestReleaseYieldsTheProcessor checks that a goroutine acquiring and
// releasing in a loop yields its processor about every yieldEvery releases
// (decision 0008), on the fast release path and on the slow one (an
// Observer sends every release there), whether the object was made for an
// Acquire or published idle by Warm: with one P, a goroutine made runnable
// before the loop runs only when the loop yields, or when the scheduler
// preempts it, some 10 ms and tens of thousands of releases later.
func TestReleaseYieldsTheProcessor(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  pool.Config
		warm bool
	}{
		{"FastPath", pool.Config{MaxSize: 1}, false},
		{"SlowPath", pool.Config{MaxSize: 1, Observer: pool.NopObserver{}}, false},
		{"SlowPathWarmed", pool.Config{MaxSize: 1, MinIdle: 1, Observer: pool.NopObserver{}}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			p := newPool(t, &fakeMgr{}, c.cfg)
			ctx := context.Background()
			if c.warm {
				require.NoError(t, p.Warm(ctx))
			} else {
				l, err := p.Acquire(ctx) // connect first: a connect may block
				require.NoError(t, err)
				l.Release()
			}

			var ran atomic.Bool
			go func() { ran.Store(true) }()
			n := 0
			for !ran.Load() && n < 1<<22 {
				l, err := p.Acquire(ctx)
				require.NoError(t, err)
				l.Release()
				n++
			}
			require.True(t, ran.Load(), "the other goroutine never ran")
			// Yields come about 3·YieldEvery releases apart at most, and one
			// schedule in 61 looks at the scheduler's global queue first and
			// may take the yielding loop straight back: allow a few yields.
			require.LessOrEqual(t, n, 16*pool.YieldEvery, "releases before the other goroutine ran")
		})
	}
}
