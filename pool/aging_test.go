package pool_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/pool"
)

// Idle objects close when the load drops (DESIGN.md, invariant 10): with
// MaxIdleTime set, reuse concentrates on the most recently released objects,
// so that after N concurrent users drop to k the pool holds the k objects
// they use and no more than MinIdle idle beside them — max(k, MinIdle) when
// the users' objects are idle at the maintainer's pass, k + MinIdle at most
// (MinIdle counts idle objects) — within MaxIdleTime, plus one reap period
// (4 ticks), plus two ticks (the tick in which the load dropped, whose
// releases tie, and the reap's own margin). The per-P stacks add nothing to
// that: a hint is taken only for an object released in the current tick.
// Checked at GOMAXPROCS 2 and 8, where the users' goroutines move between Ps
// and so between per-P stacks.

// withProcs runs f with GOMAXPROCS at n.
func withProcs(t *testing.T, n int, f func(t *testing.T)) {
	t.Run(fmt.Sprintf("GOMAXPROCS=%d", n), func(t *testing.T) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(n))
		f(t)
	})
}

// database/sql's connection max-idle-time case: five objects in use, then
// two of them reused for 2.5 s, with MaxIdleTime 1 s: the other three close
// for idleness.
func TestMaxIdleTimeClosesWhatAReducedLoadLeavesIdle(t *testing.T) {
	for _, procs := range []int{2, 8} {
		withProcs(t, procs, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newPool(t, &fakeMgr{}, pool.Config{MaxSize: 5, MaxIdleTime: time.Second})
				fill(t, p, 5)
				for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); {
					a, b := acquire(t, p), acquire(t, p)
					time.Sleep(10 * time.Millisecond)
					a.Release()
					b.Release()
					time.Sleep(10 * time.Millisecond)
				}
				synctest.Wait()
				st := p.Stats()
				require.Equal(t, uint64(3), st.ClosedBy[pool.CloseIdle], "the three not reused are closed: %+v", st)
				require.Equal(t, 2, st.Live)
			})
		})
	}
}

// N users, then k: the pool comes down to max(k, MinIdle) objects within
// MaxIdleTime + one reap period + two ticks of the drop.
func TestPoolComesDownToTheLoadAfterItDrops(t *testing.T) {
	const (
		maxIdleTime = time.Second
		tick        = 100 * time.Millisecond // pool.TickFor: MaxIdleTime/8, at most 100 ms
		margin      = maxIdleTime + 4*tick + 2*tick
	)
	for _, procs := range []int{2, 8} {
		withProcs(t, procs, func(t *testing.T) {
			for _, tc := range []struct{ n, k, minIdle int }{{8, 2, 0}, {8, 1, 0}, {8, 2, 3}} {
				t.Run(fmt.Sprintf("N=%d/k=%d/MinIdle=%d", tc.n, tc.k, tc.minIdle), func(t *testing.T) {
					synctest.Test(t, func(t *testing.T) {
						p := newPool(t, &fakeMgr{}, pool.Config{MaxSize: 16, MinIdle: tc.minIdle, MaxIdleTime: maxIdleTime})
						var users [16]atomic.Bool // users[i] set: user i runs
						var wg sync.WaitGroup
						var peakLeased atomic.Int64
						var leased atomic.Int64
						for i := range tc.n {
							users[i].Store(true)
							wg.Go(func() {
								for users[i].Load() {
									l := acquire(t, p)
									if n := leased.Add(1); n > peakLeased.Load() {
										peakLeased.Store(n)
									}
									time.Sleep(3 * time.Millisecond)
									leased.Add(-1)
									l.Release()
									time.Sleep(2 * time.Millisecond)
								}
							})
						}
						time.Sleep(time.Second)
						synctest.Wait()
						require.Equal(t, int64(tc.n), peakLeased.Load(), "the N users held N objects at once")
						require.GreaterOrEqual(t, p.Stats().Live, tc.n)
						for i := tc.k; i < tc.n; i++ {
							users[i].Store(false) // the load drops to k
						}
						time.Sleep(margin)
						synctest.Wait()
						st := p.Stats()
						if tc.minIdle == 0 {
							require.Equal(t, tc.k, st.Live, "objects left %v after the drop: %+v", margin, st)
						} else {
							// MinIdle counts idle objects: the maintainer keeps
							// that many idle beside those the users hold.
							require.GreaterOrEqual(t, st.Live, max(tc.k, tc.minIdle), "%+v", st)
							require.LessOrEqual(t, st.Live, tc.k+tc.minIdle, "objects left %v after the drop: %+v", margin, st)
						}
						for i := range tc.k {
							users[i].Store(false)
						}
						wg.Wait()
					})
				})
			}
		})
	}
}

// An object that was idle across a clock tick is not taken from the per-P
// stack: the Acquire takes the most recently released idle object instead.
func TestAcquireTakesTheMostRecentlyReleasedObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPool(t, &fakeMgr{}, pool.Config{MaxSize: 3, MaxIdleTime: time.Hour})
		a, b, c := acquire(t, p), acquire(t, p), acquire(t, p)
		c.Release() // oldest release
		time.Sleep(pool.TickFor(pool.Config{MaxIdleTime: time.Hour}))
		b.Release()
		time.Sleep(pool.TickFor(pool.Config{MaxIdleTime: time.Hour}))
		id := a.Value().id
		a.Release() // youngest
		time.Sleep(pool.TickFor(pool.Config{MaxIdleTime: time.Hour}))
		for range 5 {
			l := acquire(t, p)
			require.Equal(t, id, l.Value().id, "the object released last")
			l.Release()
			time.Sleep(pool.TickFor(pool.Config{MaxIdleTime: time.Hour}))
		}
	})
}
