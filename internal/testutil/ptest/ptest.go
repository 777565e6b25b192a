// Package ptest holds helpers for poolkit's tests: goroutines on distinct
// Ps, a single P, waiting for the garbage collector's cleanups, and whether
// the race detector is on.
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

// OneP runs the rest of the test with GOMAXPROCS 1, so that every per-P
// operation in it runs on the same P, and restores GOMAXPROCS when the test
// ends. Tests that call it must not run in parallel.
func OneP(t testing.TB) {
	t.Helper()
	prev := runtime.GOMAXPROCS(1)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
}

// CollectUntil runs garbage collection cycles until done reports true,
// giving the runtime's cleanups, which run on a goroutine of their own, a
// moment after each, and reports whether done became true within 5 seconds.
// The bound is a failure's, never a pass's: done is an event the test waits
// for.
func CollectUntil(done func() bool) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !done() {
		if time.Now().After(deadline) {
			return false
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	return true
}
