package pool_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// BenchmarkKeyedKeys measures what a key costs as keys grow from 10 to
// 100,000: each key (a string such as "tenant-12345") holds one idle object
// of size 0, so that every byte is the pool's or the key's. It reports the
// time to add one more key at that size (ns/new-key: an Acquire and
// Release of a key never seen, over 1,000 new keys), the heap per key
// (B/key: live heap after a GC, divided by the keys) and the goroutines
// the keyed pool runs beyond the test's own.
//
//	go test -run '^$' -bench KeyedKeys -benchtime 1x ./pool
func BenchmarkKeyedKeys(b *testing.B) {
	for _, n := range []int{10, 1_000, 10_000, 50_000, 100_000} {
		b.Run(fmt.Sprintf("Keys=%d", n), func(b *testing.B) {
			for b.Loop() {
				keyedKeys(b, n)
			}
		})
	}
}

func keyedKeys(b *testing.B, n int) {
	const extra = 1000
	ctx := context.Background()
	m := manager.KeyedFuncs[string, struct{}]{ConnectFunc: func(context.Context, string) (struct{}, error) { return struct{}{}, nil }}
	keys := make([]string, n+extra)
	for i := range keys {
		keys[i] = fmt.Sprintf("tenant-%d", i)
	}
	g0 := runtime.NumGoroutine()
	h0 := heapInUse()
	k, err := pool.NewKeyed[string, struct{}](m, pool.KeyedConfig{MaxSize: n + extra, MaxSizePerKey: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close(ctx)
	use := func(key string) {
		l, err := k.Acquire(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		l.Release()
	}
	for _, key := range keys[:n] {
		use(key)
	}
	h1 := heapInUse()
	goroutines := runtime.NumGoroutine() - g0
	start := time.Now()
	for _, key := range keys[n:] {
		use(key)
	}
	perKey := time.Since(start) / extra
	if k.Len() != n+extra {
		b.Fatalf("%d keys with state, want %d", k.Len(), n+extra)
	}
	b.ReportMetric(float64(perKey.Nanoseconds()), "ns/new-key")
	b.ReportMetric(float64(h1-h0)/float64(n), "B/key")
	b.ReportMetric(float64(goroutines), "goroutines")
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
