package bytepool_test

import (
	"errors"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/internal/testutil/ptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// allocator is one row of the allocator table: every behaviour test runs
// over each.
type allocator struct {
	name string
	make func() bytepool.Allocator // nil: the default (Go heap)
}

func allocators() []allocator {
	return append([]allocator{{name: "Heap"}}, platformAllocators()...)
}

// newPool returns a pool with cfg and the allocator a; it fails the test on
// error.
func newPool(t testing.TB, a allocator, cfg bytepool.Config) *bytepool.Pool {
	t.Helper()
	if a.make != nil {
		cfg.Allocator = a.make()
	}
	p, err := bytepool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func forEachAllocator(t *testing.T, f func(t *testing.T, a allocator)) {
	for _, a := range allocators() {
		t.Run("Alloc="+a.name, func(t *testing.T) { f(t, a) })
	}
}

func TestNewRejectsBadConfigNamingTheField(t *testing.T) {
	for _, tc := range []struct {
		field string
		cfg   bytepool.Config
	}{
		{"MinSize", bytepool.Config{MinSize: 100}},
		{"MinSize", bytepool.Config{MinSize: -64}},
		{"MinSize", bytepool.Config{MinSize: 4}},
		{"MaxSize", bytepool.Config{MaxSize: 3 << 20}},
		{"MaxSize", bytepool.Config{MaxSize: 2 << 30}},
		{"MaxSize", bytepool.Config{MinSize: 4096, MaxSize: 1024}},
		{"Depth", bytepool.Config{Depth: -1}},
		{"Depth", bytepool.Config{Depth: 1 << 20}},
		{"ExchangeCapacity", bytepool.Config{ExchangeCapacity: -3}},
		{"Exchange", bytepool.Config{Exchange: 7}},
		{"MaxRetained", bytepool.Config{MaxRetained: -1}},
	} {
		_, err := bytepool.New(tc.cfg)
		if !errors.Is(err, bytepool.ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", tc.cfg, err)
			continue
		}
		if !strings.Contains(err.Error(), "Config."+tc.field+" ") {
			t.Errorf("%+v: err %q does not name %s", tc.cfg, err, tc.field)
		}
	}
}

func TestGetReturnsLenNAndClassCapacity(t *testing.T) {
	forEachAllocator(t, func(t *testing.T, a allocator) {
		p := newPool(t, a, bytepool.Config{MinSize: 64, MaxSize: 1 << 20})
		for _, tc := range []struct{ n, cap int }{
			{0, 64}, {1, 64}, {64, 64}, {65, 80}, {80, 80}, {81, 96}, {100, 112},
			{127, 128}, {129, 160}, {1500, 1536}, {3000, 3072}, {4096, 4096},
			{4097, 5120}, {9000, 10240}, {33000, 40960}, {7 << 17, 7 << 17},
			{1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1},
		} {
			for range 3 { // fresh, then reused
				b := p.Get(tc.n)
				if len(b) != tc.n || cap(b) != tc.cap {
					t.Fatalf("Get(%d): len %d cap %d, want len %d cap %d", tc.n, len(b), cap(b), tc.n, tc.cap)
				}
				p.Put(b)
			}
		}
		p.Trim()
	})
}

func TestGetNegativePanicsWithPrefix(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{})
	defer func() {
		r := recover()
		if s, ok := r.(string); !ok || !strings.HasPrefix(s, "bytepool: ") {
			t.Fatalf("recover() = %v, want a bytepool: panic", r)
		}
	}()
	p.Get(-1)
}

func TestPutNilDoesNothing(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{})
	p.Put(nil)
	p.Put([]byte{})
	if s := p.Stats(); s.Drops != 0 || s.Retained != 0 {
		t.Fatalf("after Put(nil): Drops %d Retained %d, want 0", s.Drops, s.Retained)
	}
}

func TestPutFilesForeignSliceUnderLargestCoveredClass(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 64, MaxSize: 4096, Exchange: bytepool.ExchangeMutex})
	for _, tc := range []struct{ cap, class int }{
		{64, 64}, {79, 64}, {80, 80}, {100, 96}, {127, 112}, {128, 128},
		{3583, 3072}, {3584, 3584}, {5000, 4096}, {8191, 4096},
	} {
		p.Trim()
		b := make([]byte, 3, tc.cap)
		p.Put(b)
		c := p.Stats().Classes
		for _, cs := range c {
			want := 0
			if cs.Size == tc.class {
				want = 1
			}
			if cs.Buffers != want {
				t.Fatalf("Put(cap %d): class %d holds %d, want %d", tc.cap, cs.Size, cs.Buffers, want)
			}
		}
		// The foreign slice comes back with the class capacity.
		g := p.Get(tc.class)
		if cap(g) != tc.class || &g[:1][0] != &b[:1][0] {
			t.Fatalf("Get(%d) after Put(cap %d): cap %d, same array %v", tc.class, tc.cap, cap(g), &g[:1][0] == &b[:1][0])
		}
	}
	// Too small or too large: dropped.
	p.Trim()
	p.Put(make([]byte, 10, 63))
	p.Put(make([]byte, 0, 48)) // a class of a pool with a smaller MinSize
	p.Put(make([]byte, 0, 8192))
	if s := p.Stats(); s.Retained != 0 || s.Drops != 3 {
		t.Fatalf("Retained %d Drops %d, want 0 and 3", s.Retained, s.Drops)
	}
}

// TestSmallestClassesRoundTrip: with MinSize 8, the least, the classes
// start at 8 bytes (the first class entries of the pool's table) and go up
// by 2 bytes, a quarter of 8; a buffer comes back from each.
func TestSmallestClassesRoundTrip(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 8, MaxSize: 16})
	for _, tc := range []struct{ n, cap int }{{1, 8}, {8, 8}, {9, 10}, {10, 10}, {11, 12}, {13, 14}, {15, 16}, {16, 16}} {
		b := p.Get(tc.n)
		if len(b) != tc.n || cap(b) != tc.cap {
			t.Fatalf("Get(%d): len %d cap %d, want cap %d", tc.n, len(b), cap(b), tc.cap)
		}
		p.Put(b)
		if g := p.Get(tc.n); &g[:1][0] != &b[:1][0] {
			t.Fatalf("Get(%d) after Put: another buffer", tc.n)
		}
	}
}

// TestClassesAreQuarterSteps: the classes are MinSize, then 2^k × 5/4, 6/4,
// 7/4 and 8/4 for each power of two 2^k up to MaxSize; Get(n) takes the
// smallest class >= n, at most a quarter above n; and a slice of any
// capacity Put back is filed under the largest class it covers.
func TestClassesAreQuarterSteps(t *testing.T) {
	ptest.OneP(t) // Put and Get on one P
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 64, MaxSize: 1 << 20, Exchange: bytepool.ExchangeMutex})
	want := []int{64}
	for k := 64; k < 1<<20; k *= 2 {
		want = append(want, k*5/4, k*6/4, k*7/4, k*2)
	}
	if got := p.ClassSizes(); !slices.Equal(got, want) {
		t.Fatalf("classes %v, want %v", got, want)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		p.Trim() // the foreign slice below is the only buffer in the pool
		n := 1 + r.IntN(1<<20)
		i, _ := slices.BinarySearch(want, n)
		if c := p.ClassSize(n); c != want[i] {
			t.Fatalf("ClassSize(%d) = %d, want %d", n, c, want[i])
		}
		if n > 64 && float64(want[i]) > 1.25*float64(n) {
			t.Fatalf("class %d of %d is more than a quarter above it", want[i], n)
		}
		if b := p.Get(n); cap(b) != want[i] {
			t.Fatalf("Get(%d): cap %d, want %d", n, cap(b), want[i])
		}
		// A foreign slice of capacity n files under the largest class <= n.
		j, found := slices.BinarySearch(want, n)
		if !found {
			j--
		}
		if j < 0 {
			continue
		}
		f := make([]byte, 0, n)
		p.Put(f)
		if g := p.Get(want[j]); cap(g) != want[j] || &g[:1][0] != &f[:1][0] {
			t.Fatalf("foreign cap %d: Get(%d) gave cap %d, another array %v", n, want[j], cap(g), &g[:1][0] != &f[:1][0])
		}
	}
}

func TestGetZeroedZeroesUpToCapacity(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{})
	for range 4 {
		p.Put(fillCap(p.Get(1000), 0xAA))
		z := p.GetZeroed(700)
		requireZeroed(t, z, "GetZeroed")
		p.Put(z)
	}
}

// fillCap sets every byte of b up to its capacity to v and returns b.
func fillCap(b []byte, v byte) []byte {
	for i := range b[:cap(b)] {
		b[:cap(b)][i] = v
	}
	return b
}

// requireZeroed fails the test unless b is zero up to its capacity.
func requireZeroed(t *testing.T, b []byte, what string) {
	t.Helper()
	for i, v := range b[:cap(b)] {
		if v != 0 {
			t.Fatalf("%s: byte %d = %#x", what, i, v)
		}
	}
}

func TestZeroOnPutZeroesFiledBuffers(t *testing.T) {
	forEachAllocator(t, func(t *testing.T, a allocator) {
		p := newPool(t, a, bytepool.Config{ZeroOnPut: true, MinSize: 4096})
		for range 4 {
			p.Put(fillCap(p.Get(5000), 0x55))
			g := p.Get(5000)
			requireZeroed(t, g, "after ZeroOnPut")
			p.Put(g)
		}
		p.Trim()
	})
}

// TestExchangeStatsExcludeDrains checks the exchange counters, which are
// derived from the exchange's own counts of Parks and Unparks: a drain by Trim
// is not an exchange hit, and nothing is counted twice. On one P, so that the
// per-P stack is always the same one.
func TestExchangeStatsExcludeDrains(t *testing.T) {
	ptest.OneP(t)
	for _, kind := range []bytepool.ExchangeKind{bytepool.ExchangeRing, bytepool.ExchangeMutex} {
		p := newPool(t, allocator{}, bytepool.Config{Depth: 1, Spill: -1, ExchangeCapacity: 4, Exchange: kind})
		getPut := func() {
			bs := [][]byte{p.Get(1000), p.Get(1000), p.Get(1000)}
			for _, b := range bs {
				p.Put(b) // 1 on the stack, 2 in the exchange
			}
		}
		getPut() // 3 allocations
		getPut() // 1 local hit, 2 exchange hits
		s := p.Stats()
		if s.Allocs != 3 || s.LocalHits != 1 || s.ExchangeHits != 2 || s.Parked != 4 || s.Gets != 6 {
			t.Fatalf("%v: Allocs %d LocalHits %d ExchangeHits %d Parked %d Gets %d, want 3 1 2 4 6",
				kind, s.Allocs, s.LocalHits, s.ExchangeHits, s.Parked, s.Gets)
		}
		p.Trim() // drains 2 from the exchange: not Gets
		s = p.Stats()
		if s.ExchangeHits != 2 || s.Parked != 4 || s.Gets != 6 || s.Retained != 0 {
			t.Fatalf("%v after Trim: ExchangeHits %d Parked %d Gets %d Retained %d, want 2 4 6 0",
				kind, s.ExchangeHits, s.Parked, s.Gets, s.Retained)
		}
		getPut() // 3 allocations again (Trim emptied both tiers)
		getPut() // 1 local hit, 2 exchange hits
		if s = p.Stats(); s.Allocs != 6 || s.ExchangeHits != 4 || s.Parked != 8 {
			t.Fatalf("%v after refill: Allocs %d ExchangeHits %d Parked %d, want 6 4 8", kind, s.Allocs, s.ExchangeHits, s.Parked)
		}
	}
}

func TestStatsCountEachLevel(t *testing.T) {
	// ExchangeMutex: exact answers, so the counts below are deterministic.
	p := newPool(t, allocator{}, bytepool.Config{Depth: 2, Spill: -1, ExchangeCapacity: 2, Exchange: bytepool.ExchangeMutex})
	runtime.LockOSThread() // keep the P (and so the per-P stack) most of the time
	defer runtime.UnlockOSThread()
	getThenPut(p, 6, 1000)
	s := p.Stats()
	if s.Allocs != 6 || s.Gets != 6 || s.Parked > 2 {
		t.Fatalf("Allocs %d Parked %d Gets %d, want 6 <=2 6", s.Allocs, s.Parked, s.Gets)
	}
	// 2 on this P's stack (if it did not migrate), 2 in the exchange, 2 dropped.
	if c := classStats(t, s, 1024); s.Drops > 2 || s.Drops+uint64(c.Buffers) != 6 {
		t.Fatalf("Drops %d, buffers %d, want at most 2 drops and 6 in all", s.Drops, c.Buffers)
	}
	if s.StealHits != 0 {
		t.Fatalf("StealHits %d, want 0", s.StealHits)
	}
	for range 4 {
		p.Put(p.Get(1000))
	}
	s = p.Stats()
	if s.LocalHits+s.ExchangeHits != 4 || s.Gets != 10 {
		t.Fatalf("LocalHits %d ExchangeHits %d Gets %d", s.LocalHits, s.ExchangeHits, s.Gets)
	}
	if s.Retained == 0 || s.Retained > s.MaxRetained {
		t.Fatalf("Retained %d, MaxRetained %d", s.Retained, s.MaxRetained)
	}
	p.Put(p.Get(64 << 20)) // oversize: not pooled, dropped
	if s := p.Stats(); s.Oversize != 1 {
		t.Fatalf("Oversize %d, want 1", s.Oversize)
	}
}

func TestTrimReleasesEverything(t *testing.T) {
	forEachAllocator(t, func(t *testing.T, a allocator) {
		p := newPool(t, a, bytepool.Config{MinSize: 4096, MaxSize: 1 << 20})
		var bs [][]byte
		for i := range 200 {
			bs = append(bs, p.Get(4096<<(i%9)))
		}
		for _, b := range bs {
			p.Put(b)
		}
		if p.Stats().Retained == 0 {
			t.Fatal("nothing retained before Trim")
		}
		p.Trim()
		if r := p.Stats().Retained; r != 0 {
			t.Fatalf("Retained after Trim = %d, want 0", r)
		}
		waitReleased(t, p)
	})
}

// waitReleased waits until the retired stacks' cleanups have released every
// buffer (checked through the allocator when it can tell).
func waitReleased(t *testing.T, p *bytepool.Pool) {
	t.Helper()
	m, ok := p.Allocator().(interface{ Mapped() int64 })
	if !ok {
		return
	}
	if !ptest.CollectUntil(func() bool { return m.Mapped() == 0 }) {
		t.Fatalf("still mapped after Trim: %d bytes", m.Mapped())
	}
}

func TestIdleMemoryIsReleasedAtGCCycles(t *testing.T) {
	defer bytepool.SetCycleIdleFloor(0)()
	p := newPool(t, allocator{}, bytepool.Config{IdleCycles: 2, IdleTimeout: -1})
	getThenPut(p, 50, 64<<10)
	if p.Stats().Retained == 0 {
		t.Fatal("nothing retained")
	}
	deadline := time.Now().Add(10 * time.Second)
	for p.Stats().Retained != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Retained %d after %d GC ticks", p.Stats().Retained, p.Ticks())
		}
		waitTick(t, p)
	}
	if n := p.Ticks(); n < 2 {
		t.Fatalf("released after %d ticks, want >= 2", n)
	}
}

func TestReusedMemoryIsKeptAcrossGCCycles(t *testing.T) {
	defer bytepool.SetCycleIdleFloor(0)()
	p := newPool(t, allocator{}, bytepool.Config{IdleCycles: 2, IdleTimeout: -1, Exchange: bytepool.ExchangeNone})
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p.Put(p.Get(4096))
	for range 5 {
		p.Put(p.Get(4096)) // a hit (when the goroutine stayed on its P)
		waitTick(t, p)
	}
	s := p.Stats()
	if s.LocalHits >= 5 && s.Retained == 0 {
		t.Fatalf("a class reused every cycle was released (hits %d)", s.LocalHits)
	}
}

func TestCycleRuleWaitsForTheIdleFloor(t *testing.T) {
	// Many GC cycles in a row, well within the one-second floor, must not
	// release a tier filled a moment ago.
	p := newPool(t, allocator{}, bytepool.Config{IdleCycles: 1, IdleTimeout: -1})
	p.Put(p.Get(4096))
	for range 4 {
		waitTick(t, p)
	}
	if p.Stats().Retained == 0 {
		t.Fatal("released by the cycle rule before the idle floor")
	}
}

func TestIdleTimeoutReleasesAtNextGC(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{IdleCycles: -1, IdleTimeout: time.Nanosecond})
	p.Put(p.Get(4096))
	deadline := time.Now().Add(10 * time.Second)
	for p.Stats().Retained != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("Retained %d after %d ticks", p.Stats().Retained, p.Ticks())
		}
		waitTick(t, p)
	}
}

// waitTick runs GC cycles until the pool has observed one more tick.
func waitTick(t *testing.T, p *bytepool.Pool) {
	t.Helper()
	n := p.Ticks()
	if !ptest.CollectUntil(func() bool { return p.Ticks() != n }) {
		t.Fatal("no GC tick within 5s")
	}
}

func TestUnreachablePoolStopsTicking(t *testing.T) {
	// A pool that becomes garbage must not stay alive through its own
	// trimming chain, nor through the Buffer it keeps ready; with an
	// allocator that owns memory, it is released.
	forEachAllocator(t, func(t *testing.T, a allocator) {
		p := newPool(t, a, bytepool.Config{MinSize: 4096})
		p.Put(p.Get(8192))
		for range 2 * bytepool.LearnWindow { // learns 8 KiB, and keeps a Buffer of it ready
			b := p.NewBuffer(0)
			_, _ = b.Write(make([]byte, 8000))
			b.Free()
		}
		mapped, _ := p.Allocator().(interface{ Mapped() int64 })
		done := make(chan struct{})
		runtime.AddCleanup(p, func(ch chan struct{}) { close(ch) }, done)
		p = nil
		if !ptest.CollectUntil(func() bool {
			select {
			case <-done:
				return true
			default:
				return false
			}
		}) {
			t.Fatal("pool never collected")
		}
		if mapped != nil && !ptest.CollectUntil(func() bool { return mapped.Mapped() == 0 }) {
			t.Fatalf("collected pool left %d bytes mapped", mapped.Mapped())
		}
	})
}

func TestDefaultPoolStartsNoGoroutine(t *testing.T) {
	b := bytepool.Get(100)
	bytepool.Put(b)
	bytepool.Default().Trim()
	runtime.GC()
	goleak.VerifyNone(t)
}

// TestSpillHoldsWhatTheStackCannot: on one P, a burst larger than the stack
// grows the class to its full stack and spill, then goes to the exchange;
// the next burst is served by the stack and spill (LocalHits) and the
// exchange, without allocating.
func TestSpillHoldsWhatTheStackCannot(t *testing.T) {
	ptest.OneP(t)
	p := newPool(t, allocator{}, bytepool.Config{Depth: 2, Spill: 4, ExchangeCapacity: 2, Exchange: bytepool.ExchangeMutex})
	getThenPut(p, 8, 1000)
	s := p.Stats()
	c := classStats(t, s, 1024)
	if c.Depth != 2 || c.Spill != 4 || c.ExchangeCap != 2 {
		t.Fatalf("class %+v, want 1024 B with depth 2, spill 4, exchange 2", c)
	}
	if s.Allocs != 8 || s.Parked != 2 || c.Buffers != 8 {
		t.Fatalf("Allocs %d Parked %d Buffers %d, want 8 2 8", s.Allocs, s.Parked, c.Buffers)
	}
	getThenPut(p, 8, 1000)
	s = p.Stats()
	if s.Allocs != 8 || s.LocalHits != 6 || s.ExchangeHits != 2 || s.StealHits != 0 || s.Gets != 16 {
		t.Fatalf("Allocs %d LocalHits %d ExchangeHits %d StealHits %d Gets %d, want 8 6 2 0 16",
			s.Allocs, s.LocalHits, s.ExchangeHits, s.StealHits, s.Gets)
	}
	if s.MaxRetained == 0 || s.Retained != 8*1024 {
		t.Fatalf("Retained %d MaxRetained %d", s.Retained, s.MaxRetained)
	}
}

// TestGetStealsFromAnotherPsSpill: buffers one goroutine put are found by a
// goroutine on the other P: only what sits on the putter's stack (Depth 1) is
// out of its reach, the spill is not. The putter keeps its P busy while the
// getter runs, so the two run on different Ps. No exchange, so the spill is
// the only way between Ps.
//
// The scheduler may still move the spinning putter off its P (a busy
// machine, a preemption) and run the getter there, which then finds
// everything as its own: so the test runs up to 20 rounds, each on a new
// pool, and passes at the first round with the steals; every round must
// account for each buffer. With stealing switched off, every round fails.
func TestGetStealsFromAnotherPsSpill(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	const n = 6
	var s bytepool.Stats
	for range 20 {
		s = stealRound(t, n)
		if s.LocalHits+s.StealHits+(s.Allocs-n) != n {
			t.Fatalf("LocalHits %d StealHits %d Allocs %d", s.LocalHits, s.StealHits, s.Allocs)
		}
		// (Without P ids, randomIDs, a Get looks through every stack and
		// spill as its own: it finds them all, counted as local hits.)
		if (s.StealHits >= n-1 || randomIDs) && s.Allocs <= n+1 {
			return
		}
	}
	t.Fatalf("StealHits %d Allocs %d in the last of 20 rounds: the putter's spill (%d buffers) was out of the getter's reach",
		s.StealHits, s.Allocs-n, n-1)
}

// stealRound gets and puts n buffers on one P, then, while that goroutine
// spins, gets n on another goroutine, and returns the pool's Stats then.
func stealRound(t *testing.T, n int) bytepool.Stats {
	p := newPool(t, allocator{}, bytepool.Config{Depth: 1, Spill: 8, Exchange: bytepool.ExchangeNone})
	ready := make(chan struct{})
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		getThenPut(p, n, 1000)
		close(ready)
		for !stop.Load() { // hold this P while the getter runs on the other
		}
	})
	<-ready
	got := make(chan bytepool.Stats)
	go func() {
		for range n {
			_ = p.Get(1000) // kept: each Get must find a buffer the putter put
		}
		got <- p.Stats()
	}()
	s := <-got
	stop.Store(true)
	wg.Wait()
	return s
}

// TestMaxRetainedFollowsGOMAXPROCS: when GOMAXPROCS grows, each new P gets
// a stack and a spill of the size the class has grown to; Stats.MaxRetained
// reports the bound as it stands, and Retained stays within it.
func TestMaxRetainedFollowsGOMAXPROCS(t *testing.T) {
	if randomIDs {
		t.Skip("without P ids (poolkit_nolinkname) stacks are drawn from the table New made: it never grows")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 1024, MaxSize: 1024, Depth: 2, Spill: 4, ExchangeCapacity: 1})
	// The exchange and, for each of the 2 Ps the pool was made for, a slot
	// of a Buffer kept ready (1024 bytes) are reserved at New.
	const reserved = (1 + 2) * 1024
	if got, want := p.Stats().MaxRetained, int64(reserved); got != want {
		t.Fatalf("MaxRetained %d before any Put, want %d (the exchange and the ready slots)", got, want)
	}
	for range 3 {
		getThenPut(p, 8, 1024) // grows the class to its top
	}
	if got, want := p.Stats().MaxRetained, int64((2+4)*2)*1024+reserved; got != want {
		t.Fatalf("MaxRetained %d, want %d", got, want)
	}
	runtime.GOMAXPROCS(4)
	ptest.OnEachP(4, func() { // the pool sees P ids 0 to 3
		getThenPut(p, 8, 1024)
	})
	s := p.Stats()
	if want := int64((2+4)*4)*1024 + reserved; s.MaxRetained != want {
		t.Fatalf("after GOMAXPROCS 4: MaxRetained %d, want %d", s.MaxRetained, want)
	}
	if s.Retained > s.MaxRetained {
		t.Fatalf("Retained %d > MaxRetained %d", s.Retained, s.MaxRetained)
	}
}

// classStats returns the statistics of the class of the given size.
func classStats(t *testing.T, s bytepool.Stats, size int) bytepool.ClassStats {
	t.Helper()
	for _, c := range s.Classes {
		if c.Size == size {
			return c
		}
	}
	t.Fatalf("no class of %d bytes", size)
	return bytepool.ClassStats{}
}

// getThenPut gets k buffers of size n from p, then puts them all back.
func getThenPut(p *bytepool.Pool, k, n int) {
	bs := make([][]byte, k)
	for i := range bs {
		bs[i] = p.Get(n)
	}
	for _, b := range bs {
		p.Put(b)
	}
}

// TestZeroPoolIsUsable: the zero Pool gets, puts, trims and reports Stats
// with the defaults of the zero Config, and reuses what was Put.
func TestZeroPoolIsUsable(t *testing.T) {
	var p bytepool.Pool
	p.Put(nil)
	p.Put(make([]byte, 0))
	b := p.Get(1000)
	if len(b) != 1000 || cap(b) != p.ClassSize(1000) {
		t.Fatalf("Get(1000): len %d cap %d", len(b), cap(b))
	}
	b[0] = 42
	p.Put(b)
	if c := p.Get(1000); &c[0] != &b[0] {
		t.Fatal("the zero Pool did not reuse the buffer it was given")
	}
	s := p.Stats()
	if s.LocalHits == 0 || s.MaxRetained <= 0 || s.MaxRetained > bytepool.DefaultMaxRetained {
		t.Fatalf("Stats %+v", s)
	}
	buf := p.NewBuffer(10)
	_, _ = buf.WriteString("hello")
	buf.Free()
	p.Trim()
	var q bytepool.Pool
	q.Trim() // nothing made, nothing to do
}

// TestZeroPoolMadeByConcurrentFirstUses: goroutines that all start on a
// zero Pool at once, with every kind of call, find it made once, and every
// buffer Get handed out and Put took is accounted for.
func TestZeroPoolMadeByConcurrentFirstUses(t *testing.T) {
	for range 20 {
		p := new(bytepool.Pool)
		const workers, rounds = 8, 50
		var start, wg sync.WaitGroup
		start.Add(1)
		for w := range workers {
			wg.Go(func() {
				start.Wait()
				switch w % 4 {
				case 0:
					p.Put(nil)
				case 1:
					p.Put(make([]byte, 0, 4096))
				case 2:
					_ = p.Stats()
				}
				for range rounds {
					b := p.Get(1000 + w)
					b[len(b)-1] = byte(w)
					p.Put(b)
					buf := p.NewBuffer(0)
					_, _ = buf.WriteString("x")
					buf.Free()
				}
			})
		}
		start.Done()
		wg.Wait()
		s := p.Stats()
		if want := uint64(workers * rounds); s.Gets < want {
			t.Fatalf("Stats.Gets %d, want at least the %d Gets made", s.Gets, want)
		}
		if s.MaxRetained <= 0 || s.MaxRetained > bytepool.DefaultMaxRetained {
			t.Fatalf("Stats.MaxRetained %d: not a Pool with the default Config", s.MaxRetained)
		}
		p.Trim()
	}
}

// TestTrimOfAnEmptyPoolAllocatesNothing: Trim leaves the per-P tiers that
// hold nothing as they are.
func TestTrimOfAnEmptyPoolAllocatesNothing(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{})
	p.Put(p.Get(1000))
	p.Trim()
	if n := testing.AllocsPerRun(100, p.Trim); n != 0 {
		t.Fatalf("Trim of an empty pool: %v allocs, want 0", n)
	}
}
