package pool_test

import (
	"context"
	"fmt"
	"github.com/poolkit/poolkit/exchange"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolkit/poolkit/internal/shard"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// The benchmarks here measure the pool alone, in the configurations its
// decisions turn on, beside the building block under its fast path (the
// per-P stack alone). Comparisons with other pools (puddle, a channel, a
// mutex-guarded slice, sync.Pool as the floor) live in package benches, run
// by poolbench (docs/BENCHMARKS.md), with every contender in the same binary.

// poolBench adapts a *pool.Pool; it keeps the lease in the object's slot
// map-free way: the benchmark loop holds the lease itself (see runPool).
func benchNewPool(b *testing.B, cfg pool.Config) *pool.Pool[*obj] {
	return benchNewPoolOf[*obj](b, nopMgr{}, cfg)
}

func benchNewPoolOf[T any](b *testing.B, m manager.Manager[T], cfg pool.Config) *pool.Pool[T] {
	p, err := pool.New[T](m, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close(context.Background()) })
	// Warm: connect MaxSize objects.
	var ls []pool.Lease[T]
	for range cfg.MaxSize {
		l, err := p.Acquire(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		ls = append(ls, l)
	}
	for _, l := range ls {
		l.Release()
	}
	return p
}

// nopMgr is the benchmarks' manager: Recycle costs only its call.
type nopMgr struct{}

func (nopMgr) Connect(context.Context) (*obj, error)                { return &obj{}, nil }
func (nopMgr) Recycle(context.Context, *obj, manager.Metrics) error { return nil }
func (nopMgr) Close(*obj) error                                     { return nil }

// BenchmarkAcquireRelease is one goroutine taking and returning an idle
// object: the pool in several configurations (with a manager whose Recycle
// does nothing but is called, and with one that has no check), and the per-P
// stack alone (the floor).
func BenchmarkAcquireRelease(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	noCheck := manager.Funcs[*obj]{ConnectFunc: func(context.Context) (*obj, error) { return &obj{}, nil }}
	for _, c := range []struct {
		name string
		m    manager.Manager[*obj]
		cfg  pool.Config
	}{
		{"Pool", nopMgr{}, pool.Config{MaxSize: 8}},
		{"PoolNoRecycle", noCheck, pool.Config{MaxSize: 8}}, // a manager.Funcs without RecycleFunc: no Recycle call
		{"Pool/AcquireTimeout", nopMgr{}, pool.Config{MaxSize: 8, AcquireTimeout: time.Second}},
		{"Pool/Expiry", nopMgr{}, pool.Config{MaxSize: 8, MaxIdleTime: time.Hour, MaxLifetime: time.Hour, MaxUses: 1 << 40}},
		{"Pool/ExchangeMutex", nopMgr{}, pool.Config{MaxSize: 8, Exchange: exchange.KindMutex}},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := benchNewPoolOf(b, c.m, c.cfg)
			b.ReportAllocs()
			for b.Loop() {
				l, err := p.Acquire(ctx)
				if err != nil {
					b.Fatal(err)
				}
				l.Release()
			}
		})
	}
	b.Run("Local", func(b *testing.B) {
		l := shard.NewLocal[*obj](4, nil)
		o := &obj{}
		b.ReportAllocs()
		for b.Loop() {
			l.Push(o)
			l.Pop()
		}
	})
}

// BenchmarkParallel runs 1×, 4× and 16× GOMAXPROCS goroutines against pools
// of MaxSize 8 and 64, of pointers (Pool) and of an interface type, as a
// pool of net.Conn is (PoolInterface: a larger entry; decision 0009). At
// GOMAXPROCS goroutines some runs take twice as long whatever the pool:
// testing.PB is 32 bytes, written on every Next, and two goroutines' PBs
// may share a cache line.
func BenchmarkParallel(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	for _, size := range []int{8, 64} {
		for _, mult := range []int{1, 4, 16} {
			name := fmt.Sprintf("MaxSize=%d/Goroutines=%d", size, mult*procs)
			cfg := pool.Config{MaxSize: size}
			b.Run(name+"/Pool", func(b *testing.B) {
				runParallel(b, mult, benchNewPool(b, cfg))
			})
			b.Run(name+"/PoolInterface", func(b *testing.B) {
				runParallel(b, mult, benchNewPoolOf[any](b, &makeMgr[any]{mk: func() any { return &obj{} }}, cfg))
			})
		}
	}
}

func runParallel[T any](b *testing.B, mult int, p *pool.Pool[T]) {
	b.ReportAllocs()
	b.SetParallelism(mult)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			l, err := p.Acquire(ctx)
			if err != nil {
				panic(err)
			}
			l.Release()
		}
	})
}

var sinkI64 int64
var sinkTime time.Time

// BenchmarkClock compares ways for the hot path to learn the time
// (decision record 0004).
func BenchmarkClock(b *testing.B) {
	b.Run("TimeNow", func(b *testing.B) {
		for b.Loop() {
			sinkTime = time.Now()
		}
	})
	start := time.Now()
	b.Run("TimeSince", func(b *testing.B) { // monotonic only: runtime.nanotime
		for b.Loop() {
			sinkI64 = int64(time.Since(start))
		}
	})
	var clock atomic.Int64
	b.Run("AtomicLoad", func(b *testing.B) {
		for b.Loop() {
			sinkI64 = clock.Load()
		}
	})
}

// BenchmarkStatsOverhead measures the cost of the always-on statistics: the
// snapshot itself, and Acquire+Release while another goroutine takes
// snapshots continuously.
func BenchmarkStatsOverhead(b *testing.B) {
	b.Run("Snapshot", func(b *testing.B) {
		p := benchNewPool(b, pool.Config{MaxSize: 8})
		b.ReportAllocs()
		for b.Loop() {
			_ = p.Stats()
		}
	})
	b.Run("AcquireReleaseWhileReading", func(b *testing.B) {
		p := benchNewPool(b, pool.Config{MaxSize: 8})
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
					_ = p.Stats()
					time.Sleep(10 * time.Microsecond)
				}
			}
		}()
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			l, _ := p.Acquire(ctx)
			l.Release()
		}
		close(stop)
		<-done
	})
}

// BenchmarkHandOff makes goroutines wait: 4× GOMAXPROCS goroutines share
// MaxSize objects and yield while holding one, so most acquires queue and
// are served by a release's direct hand-off (decision record 0003).
func BenchmarkHandOff(b *testing.B) {
	for _, size := range []int{1, 2} {
		name := fmt.Sprintf("MaxSize=%d/Goroutines=%d", size, 4*runtime.GOMAXPROCS(0))
		b.Run(name+"/Pool", func(b *testing.B) {
			p := benchNewPool(b, pool.Config{MaxSize: size})
			b.ReportAllocs()
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					l, err := p.Acquire(ctx)
					if err != nil {
						panic(err)
					}
					runtime.Gosched()
					l.Release()
				}
			})
			st := p.Stats()
			b.ReportMetric(float64(p.PathStats().HandOffs)/float64(max(st.Acquires, 1)), "handoffs/acquire")
		})
	}
}

// BenchmarkGosched is what a release's yield costs a goroutine that has the
// processor to itself (decision 0008): one runtime.Gosched with nothing else
// to run.
func BenchmarkGosched(b *testing.B) {
	for b.Loop() {
		runtime.Gosched()
	}
}
