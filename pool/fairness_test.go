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

// TestYieldsAreSpreadEvenlyAlongEveryGeneration checks the yield's rule
// (decision 0008) along the progressions a lease's generation follows: odd
// values moving on by two per use (fast releases, hand-offs), by four (slow
// releases that publish), or by a mix: about one release in YieldEvery
// yields, never two in a row, and never more than 3·YieldEvery apart for a
// fixed step.
func TestYieldsAreSpreadEvenlyAlongEveryGeneration(t *testing.T) {
	const uses = 1 << 21
	for _, c := range []struct {
		name   string
		step   func(i int) uint64
		maxGap int
	}{
		{"StepTwo", func(int) uint64 { return 2 }, 3 * pool.YieldEvery},
		{"StepFour", func(int) uint64 { return 4 }, 3 * pool.YieldEvery},
		{"Mixed", func(i int) uint64 { return 2 + 2*uint64(i*i%7%2) }, 6 * pool.YieldEvery},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, start := range []uint64{1, 3, 5, 12345, 1<<40 + 1} {
				gen, last, hits, maxGap := start, -1, 0, 0
				for i := range uses {
					if pool.YieldDue(gen) {
						if last >= 0 {
							require.Greater(t, i-last, 1, "two yields in a row")
							maxGap = max(maxGap, i-last)
						}
						last = i
						hits++
					}
					gen += c.step(i)
				}
				want := uses / pool.YieldEvery
				require.InDelta(t, want, hits, float64(want)/20, "yields from generation %d", start)
				require.LessOrEqual(t, maxGap, c.maxGap, "uses between two yields, from generation %d", start)
			}
		})
	}
}
