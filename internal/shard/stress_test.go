package shard_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/internal/shard"
)

// token is a value with an in-use flag: taking a token that is already taken
// means one pointer was handed to two takers.
type token struct{ inUse atomic.Bool }

func take(t *testing.T, x *token) {
	if !x.inUse.CompareAndSwap(false, true) {
		t.Error("a pointer was handed to two takers")
	}
}

func give(x *token) { x.inUse.Store(false) }

// TestLocalStress pushes and pops from many goroutines while GOMAXPROCS
// changes and the stacks are retired, checking that no value is popped twice.
func TestLocalStress(t *testing.T) {
	var dropped atomic.Int64
	l := shard.NewLocal[*token](4, func(*token) { dropped.Add(1) })
	churnLocal(l, func() {
		x, ok := l.Pop()
		if !ok {
			x = new(token)
		}
		take(t, x)
		give(x)
		l.Push(x)
	})
	require.LessOrEqual(t, l.Len(), l.Depth()*8, "never more than depth per allocated stack")
}

// churnLocal runs body over and over in 16 goroutines while GOMAXPROCS
// changes and l is retired now and then, for stressDuration, and returns
// once every goroutine has stopped.
func churnLocal[T any](l *shard.Local[T], body func()) {
	prev := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prev)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				body()
			}
		})
	}
	deadline := time.Now().Add(stressDuration())
	for procs := 1; time.Now().Before(deadline); procs++ {
		runtime.GOMAXPROCS(1 + procs%5)
		if procs%3 == 0 {
			l.Retire()
			if procs%2 == 0 {
				runtime.GC() // the retired table's cleanup runs while operations are in flight
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
}

// stressDuration is how long the stress tests run: long enough to interleave,
// short enough for CI.
func stressDuration() time.Duration {
	if testing.Short() {
		return 100 * time.Millisecond
	}
	return 500 * time.Millisecond
}
