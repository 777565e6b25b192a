package exchange_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/exchange"
	"github.com/poolkit/poolkit/internal/testutil/ptest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// impls lists the bounded implementations under test, by name, with a
// constructor for each.
var impls = []struct {
	name string
	make func(capacity int) exchange.Exchange[int]
}{
	{"Ring", func(c int) exchange.Exchange[int] { return exchange.NewRing[int](c) }},
	{"Mutex", func(c int) exchange.Exchange[int] { return exchange.NewMutex[int](c) }},
}

func TestParkUnparkIsFIFO(t *testing.T) {
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			x := impl.make(8)
			// Several laps, so that wrap-around of the slot indices is covered.
			next := 0
			for lap := range 5 {
				for i := range 5 {
					require.True(t, x.Park(lap*100+i))
				}
				for range 5 {
					v, ok := x.Unpark()
					require.True(t, ok)
					require.Equal(t, next/5*100+next%5, v)
					next++
				}
			}
		})
	}
}

func TestParkReportsFullAndUnparkReportsEmpty(t *testing.T) {
	for _, impl := range impls {
		for _, capacity := range []int{1, 2, 4, 64} {
			t.Run(fmt.Sprintf("%s/Cap=%d", impl.name, capacity), func(t *testing.T) {
				x := impl.make(capacity)
				require.Equal(t, capacity, x.Cap())

				v, ok := x.Unpark()
				require.False(t, ok, "new exchange must be empty")
				require.Zero(t, v)

				for lap := range 3 {
					for i := range capacity {
						require.True(t, x.Park(i+1), "lap %d park %d", lap, i)
						require.Equal(t, i+1, x.Len())
					}
					require.False(t, x.Park(-1), "park into a full exchange")
					require.Equal(t, capacity, x.Len())
					for i := range capacity {
						v, ok := x.Unpark()
						require.True(t, ok)
						require.Equal(t, i+1, v, "the refused value must not have been stored")
						require.Equal(t, capacity-i-1, x.Len())
					}
					v, ok := x.Unpark()
					require.False(t, ok, "unpark from an empty exchange")
					require.Zero(t, v)
				}
			})
		}
	}
}

func TestNewRingRoundsCapacityUpToPowerOfTwo(t *testing.T) {
	for capacity, want := range map[int]int{1: 1, 2: 2, 3: 4, 4: 4, 5: 8, 63: 64, 64: 64, 65: 128, 1000: 1024} {
		r := exchange.NewRing[int](capacity)
		require.Equal(t, want, r.Cap(), "NewRing(%d)", capacity)
		for i := range want {
			require.True(t, r.Park(i), "NewRing(%d) holds %d values", capacity, want)
		}
		require.False(t, r.Park(0))
	}
}

func TestNewMutexKeepsCapacityExact(t *testing.T) {
	for _, capacity := range []int{1, 3, 5, 1000} {
		require.Equal(t, capacity, exchange.NewMutex[int](capacity).Cap())
	}
}

func TestConstructorsPanicOnCapacityBelowOne(t *testing.T) {
	ctors := map[string]func(int){
		"NewRing":  func(c int) { exchange.NewRing[int](c) },
		"NewMutex": func(c int) { exchange.NewMutex[int](c) },
	}
	for name, ctor := range ctors {
		for _, capacity := range []int{0, -1, -1 << 40} {
			t.Run(fmt.Sprintf("%s(%d)", name, capacity), func(t *testing.T) {
				var msg any
				func() {
					defer func() { msg = recover() }()
					ctor(capacity)
				}()
				require.NotNil(t, msg, "must panic")
				s, ok := msg.(string)
				require.True(t, ok, "panic value %#v is not a string", msg)
				require.Regexp(t, `^exchange: `, s)
			})
		}
	}
}

func TestNewRingPanicsOnCapacityTooLarge(t *testing.T) {
	require.PanicsWithValue(t, "exchange: NewRing: capacity too large: "+fmt.Sprint(1<<62+1),
		func() { exchange.NewRing[int](1<<62 + 1) })
}

func TestNoneRefusesEverything(t *testing.T) {
	var x exchange.Exchange[*int] = exchange.None[*int]{}
	require.False(t, x.Park(new(int)))
	v, ok := x.Unpark()
	require.False(t, ok)
	require.Nil(t, v)
	require.Zero(t, x.Len())
	require.Zero(t, x.Cap())
	parked, unparked := x.Counts()
	require.Zero(t, parked)
	require.Zero(t, unparked)
	var n exchange.None[string] // the zero value works too
	require.False(t, n.Park("x"))
}

// TestMPMCDeliversEveryValueOnceInProducerOrder runs producers and consumers
// against one exchange. Each value encodes (producer, sequence). It checks
// that every value is delivered exactly once, that each consumer sees each
// producer's values in increasing order, that Len stays in [0, Cap], and
// that Counts counts every successful Park and Unpark exactly once (and no
// failed one).
func TestMPMCDeliversEveryValueOnceInProducerOrder(t *testing.T) {
	perRun := 200_000 // values per configuration
	if ptest.Race {
		perRun = 20_000
	}
	if testing.Short() {
		perRun /= 10
	}
	shapes := []struct{ producers, consumers int }{{4, 4}, {1, 8}, {8, 1}}
	for _, impl := range impls {
		for _, capacity := range []int{4, 64} {
			for _, shape := range shapes {
				name := fmt.Sprintf("%s/Cap=%d/P=%dxC=%d", impl.name, capacity, shape.producers, shape.consumers)
				t.Run(name, func(t *testing.T) {
					stress(t, impl.make(capacity), shape.producers, shape.consumers, perRun/shape.producers)
				})
			}
		}
	}
}

func stress(t *testing.T, x exchange.Exchange[int], producers, consumers, perProducer int) {
	const seqBits = 32
	seen := make([][]atomic.Bool, producers)
	for p := range seen {
		seen[p] = make([]atomic.Bool, perProducer)
	}
	total := int64(producers * perProducer)
	var delivered atomic.Int64
	var stop atomic.Bool // set on the first failure, so every goroutine exits
	fail := func(format string, args ...any) {
		t.Errorf(format, args...)
		stop.Store(true)
	}

	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for seq := 0; seq < perProducer && !stop.Load(); {
				if x.Park(p<<seqBits | seq) {
					seq++
				} else {
					runtime.Gosched() // full: let a consumer run
				}
			}
		})
	}
	for range consumers {
		wg.Go(func() {
			last := make([]int, producers)
			for p := range last {
				last[p] = -1
			}
			for delivered.Load() < total && !stop.Load() {
				v, ok := x.Unpark()
				if !ok {
					runtime.Gosched() // empty: let a producer run
					continue
				}
				p, seq := v>>seqBits, v&(1<<seqBits-1)
				if p < 0 || p >= producers || seq >= perProducer {
					fail("unparked a value never parked: %#x", v)
					return
				}
				if seq <= last[p] {
					fail("producer %d: value %d unparked after %d", p, seq, last[p])
					return
				}
				last[p] = seq
				if seen[p][seq].Swap(true) {
					fail("producer %d value %d delivered twice", p, seq)
					return
				}
				delivered.Add(1)
			}
		})
	}
	var samples, lenFailures int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for delivered.Load() < total && !stop.Load() {
			if n := x.Len(); n < 0 || n > x.Cap() {
				lenFailures++
				fail("Len() = %d, outside [0, %d]", n, x.Cap())
			}
			if parked, unparked := x.Counts(); unparked > parked || parked > uint64(total) {
				fail("Counts() = %d parked, %d unparked: want unparked <= parked <= %d", parked, unparked, total)
			}
			samples++
			runtime.Gosched()
		}
	}()
	wg.Wait()
	<-done
	require.False(t, t.Failed())
	require.Equal(t, total, delivered.Load())
	for p := range seen {
		for seq := range seen[p] {
			require.True(t, seen[p][seq].Load(), "producer %d value %d never delivered", p, seq)
		}
	}
	_, ok := x.Unpark()
	require.False(t, ok, "exchange must be empty at the end")
	require.Zero(t, x.Len())
	require.Zero(t, lenFailures)
	// Every successful Park and Unpark was counted, exactly once; the failed
	// ones (full, empty, lost races) were not.
	parked, unparked := x.Counts()
	require.Equal(t, uint64(total), parked, "Counts: parked")
	require.Equal(t, uint64(total), unparked, "Counts: unparked")
	t.Logf("%d Len samples", samples)
}

type payload struct {
	_ *payload // a pointer field keeps the object out of the tiny allocator
	_ [48]byte
}

//go:noinline
func newPayload() *payload { return new(payload) }

// parkOnly parks a fresh object and returns only a weak pointer to it.
//
//go:noinline
func parkOnly(t *testing.T, x exchange.Exchange[*payload]) weak.Pointer[payload] {
	p := newPayload()
	require.True(t, x.Park(p))
	return weak.Make(p)
}

// parkAndUnpark parks a fresh object, unparks it and drops it.
//
//go:noinline
func parkAndUnpark(t *testing.T, x exchange.Exchange[*payload]) weak.Pointer[payload] {
	p := newPayload()
	w := weak.Make(p)
	require.True(t, x.Park(p))
	got, ok := x.Unpark()
	require.True(t, ok)
	require.Same(t, p, got)
	return w
}

func TestUnparkedValueIsNotRetained(t *testing.T) {
	exchanges := map[string]func() exchange.Exchange[*payload]{
		"Ring":  func() exchange.Exchange[*payload] { return exchange.NewRing[*payload](4) },
		"Mutex": func() exchange.Exchange[*payload] { return exchange.NewMutex[*payload](4) },
	}
	for name, mk := range exchanges {
		t.Run(name, func(t *testing.T) {
			// Control: a parked value is held, so the check below can fail.
			x := mk()
			w := parkOnly(t, x)
			for range 20 {
				runtime.GC()
			}
			require.NotNil(t, w.Value(), "a parked value must stay reachable")
			runtime.KeepAlive(x)

			// Through every slot, so a leftover in any slot would be caught.
			x = mk()
			weaks := make([]weak.Pointer[payload], 0, 2*x.Cap())
			for range 2 * x.Cap() {
				weaks = append(weaks, parkAndUnpark(t, x))
			}
			for i, w := range weaks {
				require.True(t, ptest.CollectUntil(func() bool { return w.Value() == nil }),
					"value %d retained after Unpark", i)
			}
			runtime.KeepAlive(x)
		})
	}
}

func TestParkUnparkDoesNotAllocate(t *testing.T) {
	if ptest.Race {
		t.Skip("the race detector allocates")
	}
	p := new(int)
	cases := map[string]func(){
		"Ring/int":      parkUnpark(exchange.NewRing[int](8), 1),
		"Ring/pointer":  parkUnpark(exchange.NewRing[*int](8), p),
		"Mutex/int":     parkUnpark(exchange.NewMutex[int](8), 1),
		"Mutex/pointer": parkUnpark(exchange.NewMutex[*int](8), p),
	}
	for name, f := range cases {
		require.Zero(t, testing.AllocsPerRun(1000, f), name)
	}
}

func parkUnpark[T any](x exchange.Exchange[T], v T) func() {
	return func() {
		x.Park(v)
		x.Unpark()
	}
}

// TestLenStaysInBoundsWhileChurning hammers Len against concurrent Park and
// Unpark at the edges of the ring (nearly empty and nearly full).
func TestLenStaysInBoundsWhileChurning(t *testing.T) {
	d := 200 * time.Millisecond
	if testing.Short() {
		d = 20 * time.Millisecond
	}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			x := impl.make(2)
			var stop atomic.Bool
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for !stop.Load() {
						x.Park(1)
						x.Park(2)
						x.Unpark()
					}
				})
			}
			deadline := time.Now().Add(d)
			for time.Now().Before(deadline) {
				n := x.Len()
				if !assert.True(t, n >= 0 && n <= x.Cap(), "Len() = %d", n) {
					break
				}
			}
			stop.Store(true)
			wg.Wait()
		})
	}
}

func TestHistogramBucketsAreContiguous(t *testing.T) {
	require.Equal(t, histBuckets-1, histIndex(1<<64-1))
	for i := range histBuckets - 2 {
		lo, hi := histLow(i), histLow(i+1)
		require.Less(t, lo, hi, "bucket %d", i)
		require.Equal(t, i, histIndex(lo), "low edge of bucket %d", i)
		require.Equal(t, i, histIndex(hi-1), "high edge of bucket %d", i)
		if lo >= histSub {
			require.LessOrEqual(t, (hi-lo)*histSub, lo, "bucket %d is at most 1/%d wide", i, histSub)
		}
	}
	var h histogram
	for v := range uint64(1000) {
		h.record(v*16, 1)
	}
	require.InDelta(t, 500*16, h.quantile(0.5), 500*16/histSub)
	require.InDelta(t, 990*16, h.quantile(0.99), 990*16/histSub)
	require.Equal(t, uint64(999*16), h.max)
}
