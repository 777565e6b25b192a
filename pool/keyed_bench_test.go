package pool_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// BenchmarkKeyedAcquireRelease is the keyed pool's hot path next to the
// single pool's: one goroutine, a key with an idle object.
func BenchmarkKeyedAcquireRelease(b *testing.B) {
	ctx := context.Background()
	b.Run("Pool", func(b *testing.B) {
		p, err := pool.New[*int](manager.Funcs[*int]{ConnectFunc: func(context.Context) (*int, error) { return new(int), nil }}, pool.Config{MaxSize: 8})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Close(ctx)
		b.ReportAllocs()
		for b.Loop() {
			l, _ := p.Acquire(ctx)
			l.Release()
		}
	})
	b.Run("Keyed", func(b *testing.B) {
		k, err := pool.NewKeyed[string, *int](manager.KeyedFuncs[string, *int]{ConnectFunc: func(context.Context, string) (*int, error) { return new(int), nil }}, pool.KeyedConfig{MaxSize: 8})
		if err != nil {
			b.Fatal(err)
		}
		defer k.Close(ctx)
		b.ReportAllocs()
		for b.Loop() {
			l, _ := k.Acquire(ctx, "tenant-0042")
			l.Release()
		}
	})
}

// BenchmarkKeyedZipfFairness measures what each key waits under a Zipf
// load with the cap binding: 64 goroutines over 100 keys (Zipf, s = 1.1),
// MaxSize 30, MaxSizePerKey 4, a connect of 200 µs and a hold of 50 µs
// (sleeps: the goroutines wait, as on a server). It reports the p99 of an
// Acquire for the worst key and for the median key, among keys with at
// least 100 Acquires, and how many keys that is.
func BenchmarkKeyedZipfFairness(b *testing.B) {
	const (
		workers = 64
		keys    = 100
	)
	m := manager.KeyedFuncs[int, *int]{ConnectFunc: func(context.Context, int) (*int, error) {
		time.Sleep(200 * time.Microsecond)
		return new(int), nil
	}}
	k, err := pool.NewKeyed[int, *int](m, pool.KeyedConfig{MaxSize: 30, MaxSizePerKey: 4})
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close(context.Background())
	var mu sync.Mutex
	waits := make([][]time.Duration, keys)
	per := b.N/workers + 1
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 2))
			z := rand.NewZipf(r, 1.1, 1, keys-1)
			mine := make([][]time.Duration, keys)
			for range per {
				key := int(z.Uint64())
				start := time.Now()
				l, err := k.Acquire(context.Background(), key)
				if err != nil {
					panic(err)
				}
				mine[key] = append(mine[key], time.Since(start))
				time.Sleep(50 * time.Microsecond)
				l.Release()
			}
			mu.Lock()
			for i := range mine {
				waits[i] = append(waits[i], mine[i]...)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	b.StopTimer()
	var p99s []time.Duration
	for _, ws := range waits {
		if len(ws) < 100 {
			continue
		}
		slices.Sort(ws)
		p99s = append(p99s, ws[len(ws)*99/100])
	}
	if len(p99s) == 0 {
		return
	}
	slices.Sort(p99s)
	b.ReportMetric(float64(p99s[len(p99s)-1].Microseconds()), "worst-key-p99-µs")
	b.ReportMetric(float64(p99s[len(p99s)/2].Microseconds()), "median-key-p99-µs")
	b.ReportMetric(float64(len(p99s)), "keys")
	s := k.Stats()
	b.ReportMetric(float64(s.ClosedBy[pool.CloseEvict])/float64(s.Acquires), "evictions/acquire")
}
