package pool_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/poolkit/poolkit/internal/shard"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// benchPool is what the benchmarks drive: the pool and the baselines.
type benchPool interface {
	get(ctx context.Context) *obj
	put(*obj)
}

// chanPool is the channel baseline: a buffered channel of idle objects.
type chanPool struct{ ch chan *obj }

func newChanPool(n int) *chanPool {
	c := &chanPool{ch: make(chan *obj, n)}
	for i := range n {
		c.ch <- &obj{id: int64(i)}
	}
	return c
}
func (c *chanPool) get(context.Context) *obj { return <-c.ch }
func (c *chanPool) put(o *obj)               { c.ch <- o }

// mutexPool is the mutex-slice baseline: a slice under a sync.Mutex, with a
// sync.Cond for waiters.
type mutexPool struct {
	mu   sync.Mutex
	cond sync.Cond
	idle []*obj
}

func newMutexPool(n int) *mutexPool {
	m := &mutexPool{}
	m.cond.L = &m.mu
	for i := range n {
		m.idle = append(m.idle, &obj{id: int64(i)})
	}
	return m
}
func (m *mutexPool) get(context.Context) *obj {
	m.mu.Lock()
	for len(m.idle) == 0 {
		m.cond.Wait()
	}
	o := m.idle[len(m.idle)-1]
	m.idle = m.idle[:len(m.idle)-1]
	m.mu.Unlock()
	return o
}
func (m *mutexPool) put(o *obj) {
	m.mu.Lock()
	m.idle = append(m.idle, o)
	m.mu.Unlock()
	m.cond.Signal()
}

// poolBench adapts a *pool.Pool; it keeps the lease in the object's slot
// map-free way: the benchmark loop holds the lease itself (see runPool).
func benchNewPool(b *testing.B, cfg pool.Config) *pool.Pool[*obj] {
	p, err := pool.New[*obj](nopMgr{}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close(context.Background()) })
	// Warm: connect MaxSize objects.
	var ls []pool.Lease[*obj]
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
// object: the pool in several configurations, the per-P stack alone (the
// floor), and the two baselines.
func BenchmarkAcquireRelease(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, c := range []struct {
		name string
		cfg  pool.Config
	}{
		{"Pool", pool.Config{MaxSize: 8}},
		{"Pool/AcquireTimeout", pool.Config{MaxSize: 8, AcquireTimeout: time.Second}},
		{"Pool/Expiry", pool.Config{MaxSize: 8, MaxIdleTime: time.Hour, MaxLifetime: time.Hour, MaxUses: 1 << 40}},
		{"Pool/ExchangeMutex", pool.Config{MaxSize: 8, Exchange: pool.ExchangeMutex}},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := benchNewPool(b, c.cfg)
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
	for _, c := range []struct {
		name string
		p    benchPool
	}{{"Channel", newChanPool(8)}, {"MutexSlice", newMutexPool(8)}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.p.put(c.p.get(ctx))
			}
		})
	}
}

// BenchmarkParallel runs 1×, 4× and 16× GOMAXPROCS goroutines against pools
// of MaxSize 8 and 64.
func BenchmarkParallel(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	for _, size := range []int{8, 64} {
		for _, mult := range []int{1, 4, 16} {
			name := fmt.Sprintf("MaxSize=%d/Goroutines=%d", size, mult*procs)
			b.Run(name+"/Pool", func(b *testing.B) {
				p := benchNewPool(b, pool.Config{MaxSize: size})
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
			})
			for _, bl := range []struct {
				name string
				mk   func(int) benchPool
			}{
				{"Channel", func(n int) benchPool { return newChanPool(n) }},
				{"MutexSlice", func(n int) benchPool { return newMutexPool(n) }},
			} {
				b.Run(name+"/"+bl.name, func(b *testing.B) {
					bp := bl.mk(size)
					b.ReportAllocs()
					b.SetParallelism(mult)
					b.RunParallel(func(pb *testing.PB) {
						ctx := context.Background()
						for pb.Next() {
							bp.put(bp.get(ctx))
						}
					})
				})
			}
		}
	}
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
			b.ReportMetric(float64(st.HandOffs)/float64(max(st.Acquires, 1)), "handoffs/acquire")
		})
		for _, bl := range []struct {
			name string
			mk   func(int) benchPool
		}{
			{"Channel", func(n int) benchPool { return newChanPool(n) }},
			{"MutexCond", func(n int) benchPool { return newMutexPool(n) }},
		} {
			b.Run(name+"/"+bl.name, func(b *testing.B) {
				bp := bl.mk(size)
				b.ReportAllocs()
				b.SetParallelism(4)
				b.RunParallel(func(pb *testing.PB) {
					ctx := context.Background()
					for pb.Next() {
						o := bp.get(ctx)
						runtime.Gosched()
						bp.put(o)
					}
				})
			})
		}
	}
}
