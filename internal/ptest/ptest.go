// Package ptest holds helpers for tests that need goroutines on distinct Ps.
package ptest

import (
	"sync"
	"sync/atomic"
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
