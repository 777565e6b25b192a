package pool_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// skipper is a fakeMgr that says whether the pool may skip its Recycle.
type skipper struct {
	*fakeMgr
	skip bool
}

func (s skipper) SkipRecycle() bool { return s.skip }

// A manager that says it has no check (its SkipRecycle method: see manager.Manager) is never
// asked for one (DESIGN.md, invariant 28): not on the fast path, the slow
// path, a hand-off, nor in health checks; one that says it has a check gets
// every reuse checked.
func TestManagerThatSkipsRecycleIsNeverAskedToCheck(t *testing.T) {
	for _, skip := range []bool{true, false} {
		t.Run(map[bool]string{true: "Skip", false: "Check"}[skip], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeMgr{recycle: func(context.Context, *obj, manager.Metrics) error { return nil }}
				p := newPool(t, skipper{f, skip}, pool.Config{MaxSize: 2, HealthCheckPeriod: time.Second})
				fill(t, p, 2)
				uses := 0
				for range 10 { // fast path
					acquire(t, p).Release()
					uses++
				}
				p.DropHints()
				acquire(t, p).Release() // slow path: the registry scan
				uses++
				a, b := acquire(t, p), acquire(t, p)
				uses += 2
				done := make(chan struct{})
				go func() { defer close(done); acquire(t, p).Release() }() // waits
				synctest.Wait()
				a.Release() // handed off
				<-done
				uses++
				b.Release()
				time.Sleep(5 * time.Second) // health check periods
				synctest.Wait()
				if skip {
					require.Zero(t, f.recycles.Load(), "Recycle is never called")
					require.Zero(t, p.Stats().HealthChecks)
				} else {
					require.Equal(t, int64(uses), f.recycles.Load()-int64(p.Stats().HealthChecks), "every reuse is checked")
					require.NotZero(t, p.Stats().HealthChecks)
				}
			})
		})
	}
}
