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
// (decision 0008): with one P, a goroutine made runnable before the loop
// runs only when the loop yields, or when the scheduler preempts it, some
// 10 ms and tens of thousands of releases later.
func TestReleaseYieldsTheProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := newPool(t, &fakeMgr{}, pool.Config{MaxSize: 1})
	ctx := context.Background()
	l, err := p.Acquire(ctx) // connect first: a connect may block
	require.NoError(t, err)
	l.Release()

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
	// A yield puts the loop at the back of the scheduler's global queue;
	// one schedule in 61 looks there first and may take the loop straight
	// back, so allow a few yields.
	require.LessOrEqual(t, n, 4*pool.YieldEvery, "releases before the other goroutine ran")
}
