// Package ptest holds helpers for poolkit's tests: goroutines on distinct
// Ps, a single P, and waiting for the garbage collector's cleanups.
package ptest

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// OnEachP runs f on n goroutines at once and returns when all have returned.
// Each goroutine spins until all n run before it calls f, so at that moment
// each holds a P of its own: with n == GOMAXPROCS, f almost always sees every
// P id (a goroutine may still be preempted or moved before f runs). With
// n above GOMAXPROCS the spinning ends only as the scheduler preempts
// spinners, and the goroutines no longer each hold a P.
func OnEachP(n int, f func()) {
	var started atomic.Int32
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			started.Add(1)
			for started.Load() < int32(n) {
			}
			f()
		})
	}
	wg.Wait()
}

// OnOneP runs f with GOMAXPROCS 1, so that every per-P operation in f runs on
// the same P, and restores GOMAXPROCS after.
func OnOneP(t testing.TB, f func()) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
}

// CollectUntil runs the garbage collector until done reports true, giving
// the runtime's cleanups (which run on a goroutine of their own) a moment
// after each cycle, and reports whether done became true within 100 cycles.
func CollectUntil(done func() bool) bool {
	for range 100 {
		if done() {
			return true
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	return done()
}
