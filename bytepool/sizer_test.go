package bytepool_test

import (
	"bytes"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/internal/testutil/ptest"
)

// chunk is what the Buffer workloads write at a time, as an encoder or a
// copy loop does.
var chunk = bytes.Repeat([]byte("0123456789abcdef"), 32) // 512 bytes

// use is one use of a Buffer as a request makes it: n bytes written in
// chunks, read out, freed. It returns how many times the storage grew.
func use(b *bytepool.Buffer, n int) (growths int) {
	c := b.Cap()
	for w := 0; w < n; w += len(chunk) {
		_, _ = b.Write(chunk[:min(len(chunk), n-w)])
		if b.Cap() != c {
			growths++
			c = b.Cap()
		}
	}
	_, _ = b.WriteTo(io.Discard)
	b.Free()
	return growths
}

// TestHotSizeIsTheClassOfHotIndex: hotSize(hotIndex(n-1)) is the smallest
// quarter step at or above n, and hotIndex of that size less one is the
// index again, for every size a Buffer can reach on 64-bit and 32-bit
// platforms.
func TestHotSizeIsTheClassOfHotIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100_000 {
		n := 8 + r.IntN(1<<40)
		if r.IntN(2) == 0 {
			n = 8 + r.IntN(1<<16)
		}
		i := bytepool.HotIndex(n - 1)
		c := bytepool.HotSize(i)
		k := 1 << (63 - leadingZeros(uint64(n-1))) // the power of two at or below n-1
		want := (n - 1 + k/4) / (k / 4) * (k / 4)  // the next quarter step above n-1
		if c != want || bytepool.HotIndex(c-1) != i {
			t.Fatalf("n %d: hotSize(hotIndex(n-1)) = %d, want %d (index %d, back %d)", n, c, want, i, bytepool.HotIndex(c-1))
		}
	}
	if got := bytepool.HotSize(bytepool.HotIndex(math.MaxInt - 1)); got != math.MaxInt {
		t.Fatalf("the class of MaxInt: %d, want MaxInt (it does not fit)", got)
	}
}

func leadingZeros(x uint64) int {
	n := 0
	for x&(1<<63) == 0 {
		x <<= 1
		n++
	}
	return n
}

// TestBufferStartsAtTheSizeItsPoolLearnt: a pool that has seen 64 Buffers
// (one window, on one P) reach 40 000 bytes starts every Buffer made without
// a hint at that size's class, and they no longer grow; before that it
// teaches nothing and they start empty. The same for a pool from New, the
// zero Pool and a Sizer.
func TestBufferStartsAtTheSizeItsPoolLearnt(t *testing.T) {
	ptest.OneP(t)
	const n = 40_000
	var zero bytepool.Pool
	sizer := bytepool.Sizer{Pool: newPool(t, allocator{}, bytepool.Config{})}
	p := newPool(t, allocator{}, bytepool.Config{})
	for _, c := range []struct {
		name string
		new  func() *bytepool.Buffer
		size func() int
	}{
		{"New", func() *bytepool.Buffer { return p.NewBuffer(0) }, func() int { return p.Stats().BufferSize }},
		{"zero Pool", func() *bytepool.Buffer { return zero.NewBuffer(0) }, func() int { return zero.Stats().BufferSize }},
		{"Sizer", sizer.NewBuffer, sizer.Size},
	} {
		t.Run(c.name, func(t *testing.T) {
			class := p.ClassSize(n)
			for i := range bytepool.LearnWindow - 1 {
				if c.size() != 0 {
					t.Fatalf("learnt %d after %d Buffers, before a window was full", c.size(), i)
				}
				use(c.new(), n)
			}
			if c.name == "Sizer" && c.size() == 0 {
				use(c.new(), n) // its first lesson made the windows, in a window of its own
			}
			use(c.new(), n)
			if c.size() != class {
				t.Fatalf("learnt %d after a window of %d-byte Buffers, want their class %d", c.size(), n, class)
			}
			for range 100 {
				b := c.new()
				if b.Cap() != class || b.Len() != 0 {
					t.Fatalf("a new Buffer: Len %d Cap %d, want 0 and %d", b.Len(), b.Cap(), class)
				}
				if g := use(b, n); g != 0 {
					t.Fatalf("a Buffer of %d bytes grew %d times after the pool learnt its size", n, g)
				}
			}
		})
	}
	sizer.Pool.Trim()
	zero.Trim()
}

// TestLearntSizeIgnoresOutliers: up to three Buffers in a window of 64 that
// reach 8 MiB among 2 KiB ones do not move the size learnt; a fourth makes
// them the 95th percentile. What the outliers leave in the pool stays
// within its budget.
func TestLearntSizeIgnoresOutliers(t *testing.T) {
	ptest.OneP(t)
	p := newPool(t, allocator{}, bytepool.Config{MaxRetained: 64 << 20})
	const small, big = 2 << 10, 8 << 20
	window := func(outliers int) int {
		for i := range bytepool.LearnWindow {
			n := small
			if i%16 == 7 && i/16 < outliers {
				n = big
			}
			use(p.NewBuffer(0), n)
		}
		return p.Stats().BufferSize
	}
	if got := window(bytepool.LearnAbove); got != small {
		t.Fatalf("after %d outliers in a window: learnt %d, want %d", bytepool.LearnAbove, got, small)
	}
	if got := window(bytepool.LearnAbove + 1); got != big {
		t.Fatalf("after %d outliers in a window: learnt %d, want %d", bytepool.LearnAbove+1, got, big)
	}
	if got := window(0); got != small {
		t.Fatalf("a window without outliers: learnt %d, want %d: the last window is what counts", got, small)
	}
	s := p.Stats()
	if s.Retained > s.MaxRetained || s.MaxRetained > 64<<20 {
		t.Fatalf("Retained %d, MaxRetained %d: beyond the budget of 64 MiB", s.Retained, s.MaxRetained)
	}
	p.Trim()
}

// TestLearntSizeIsCappedAtMaxSize: Buffers that reach beyond MaxSize teach
// their size, but a new Buffer starts at MaxSize at most: no Buffer takes
// memory from outside the pool before it needs it.
func TestLearntSizeIsCappedAtMaxSize(t *testing.T) {
	ptest.OneP(t)
	p := newPool(t, allocator{}, bytepool.Config{MaxSize: 4 << 10})
	for range bytepool.LearnWindow {
		use(p.NewBuffer(0), 20_000)
	}
	if got := p.Stats().BufferSize; got != 4<<10 {
		t.Fatalf("BufferSize %d, want MaxSize", got)
	}
	if b := p.NewBuffer(0); b.Cap() != 4<<10 {
		t.Fatalf("a new Buffer has Cap %d, want MaxSize", b.Cap())
	} else {
		b.Free()
	}
}

// TestSizeHintWinsOverTheLearntSize: once the pool has learnt 64 KiB, a
// Buffer made with a hint, or a zero Buffer given one with Grow, takes the
// hint's class; so does ReadFrom of a reader that says how much it holds.
func TestSizeHintWinsOverTheLearntSize(t *testing.T) {
	ptest.OneP(t)
	p := newPool(t, allocator{}, bytepool.Config{})
	for range bytepool.LearnWindow {
		use(p.NewBuffer(0), 64<<10)
	}
	if got := p.Stats().BufferSize; got != 64<<10 {
		t.Fatalf("BufferSize %d, want 64 KiB", got)
	}
	b := p.NewBuffer(1000)
	if b.Cap() != p.ClassSize(1000) {
		t.Fatalf("NewBuffer(1000): Cap %d, want %d", b.Cap(), p.ClassSize(1000))
	}
	b.Free()
	b = p.NewBuffer(0)
	b.Free() // keeps a 64 KiB Buffer ready on the P
	b = p.NewBuffer(300)
	if b.Cap() != p.ClassSize(300) {
		t.Fatalf("NewBuffer(300) after a 64 KiB Buffer was freed: Cap %d, want %d", b.Cap(), p.ClassSize(300))
	}
	b.Free()
	var z bytepool.Buffer
	z.Grow(5000)
	if z.Cap() != bytepool.Default().ClassSize(5000) {
		t.Fatalf("Grow(5000) of a zero Buffer: Cap %d", z.Cap())
	}
	z.Free()
}

// TestSteadyWorkloadGrowsAtMostOncePerUse: Buffers whose sizes are drawn
// from a fixed spread (1 to 40 KB) start, once the pool has learnt them, at
// a size that holds 95% of them; none grows more than once, and at least
// nine in ten never do.
func TestSteadyWorkloadGrowsAtMostOncePerUse(t *testing.T) {
	ptest.OneP(t)
	p := newPool(t, allocator{}, bytepool.Config{})
	r := rand.New(rand.NewPCG(5, 6))
	size := func() int { return 1000 + r.IntN(39_000) }
	for range 4 * bytepool.LearnWindow {
		use(p.NewBuffer(0), size())
	}
	grew := 0
	const uses = 2000
	for range uses {
		switch g := use(p.NewBuffer(0), size()); {
		case g > 1:
			t.Fatalf("a Buffer grew %d times", g)
		case g == 1:
			grew++
		}
	}
	if grew > uses/10 {
		t.Fatalf("%d of %d Buffers grew, want at most a tenth", grew, uses)
	}
}

// TestBufferUseAllocatesNothingWithoutAHint: a Buffer made without a hint,
// written in chunks to 2 KiB, 32 KiB or 256 KiB, read out and freed,
// allocates nothing once the pool has learnt the size, from a pool from
// New, the default pool, the zero Pool and a Sizer; and nothing either
// while it still grows through the classes, once they are warm.
func TestBufferUseAllocatesNothingWithoutAHint(t *testing.T) {
	if !bytepool.RecycleHeaders {
		t.Skip("the poolkit_debug build does not recycle Buffer headers")
	}
	var zero bytepool.Pool
	var sizer bytepool.Sizer
	fromNew := newPool(t, allocator{}, bytepool.Config{})
	pools := []struct {
		name string
		new  func() *bytepool.Buffer
	}{
		{"New", func() *bytepool.Buffer { return fromNew.NewBuffer(0) }},
		{"Default", func() *bytepool.Buffer { return bytepool.Default().NewBuffer(0) }},
		{"zero Pool", func() *bytepool.Buffer { return zero.NewBuffer(0) }},
		{"Sizer", sizer.NewBuffer},
	}
	for _, c := range pools {
		for _, n := range []int{2 << 10, 32 << 10, 256 << 10} {
			for range 4 * bytepool.LearnWindow {
				use(c.new(), n)
			}
			if allocs := testing.AllocsPerRun(200, func() { use(c.new(), n) }); allocs != 0 {
				t.Errorf("%s, %d bytes: %v allocs per use, want 0", c.name, n, allocs)
			}
		}
	}
	// Growth: Buffers that outgrow the size learnt take each larger
	// buffer from the pool and put the smaller one back.
	p := newPool(t, allocator{}, bytepool.Config{})
	var i int
	grow := func() {
		n := 2 << 10
		if i++; i%20 == 0 {
			n = 100 << 10 // five growths past 2 KiB
		}
		use(p.NewBuffer(0), n)
	}
	for range 8 * bytepool.LearnWindow {
		grow()
	}
	if got := p.Stats().BufferSize; got != 2<<10 {
		t.Fatalf("learnt %d, want 2 KiB", got)
	}
	if allocs := testing.AllocsPerRun(400, grow); allocs != 0 {
		t.Errorf("Buffers growing past the size learnt: %v allocs per use, want 0", allocs)
	}
	zero.Trim()
	fromNew.Trim()
	p.Trim()
}

// TestFreeKeepsABufferReadyWithinTheBudget: Free keeps the Buffer, with its
// storage, ready for the next NewBuffer on the P: Stats counts it, the
// budget reserves a slot per P for it, the next NewBuffer gets the same
// storage back, Trim releases it, and idle trimming does too.
func TestFreeKeepsABufferReadyWithinTheBudget(t *testing.T) {
	if !bytepool.RecycleHeaders || bytepool.ProcID() < 0 {
		t.Skip("Buffers are kept ready per P, not in the poolkit_debug build nor in the builds without P ids")
	}
	ptest.OneP(t)
	defer bytepool.SetCycleIdleFloor(0)()
	p := newPool(t, allocator{}, bytepool.Config{IdleCycles: 1})
	if p.ReadyMax() <= 0 || int64(p.ReadyMax()) > bytepool.DefaultMaxRetained/16 {
		t.Fatalf("ReadyMax %d", p.ReadyMax())
	}
	if s := p.Stats(); s.MaxRetained < int64(p.ReadyMax()) {
		t.Fatalf("MaxRetained %d does not reserve the ready slot of %d", s.MaxRetained, p.ReadyMax())
	}
	for range bytepool.LearnWindow {
		use(p.NewBuffer(0), 4000) // the pool learns 4 KiB
	}
	b := p.NewBuffer(0)
	_, _ = b.WriteString("kept")
	first := &b.Bytes()[0]
	b.Free()
	if s := p.Stats(); s.ReadyRetained != 4096 || s.Retained < 4096 {
		t.Fatalf("ReadyRetained %d, Retained %d after Free, want the 4 KiB kept", s.ReadyRetained, s.Retained)
	}
	b = p.NewBuffer(0)
	_ = b.WriteByte('x')
	if &b.Bytes()[0] != first || b.Len() != 1 {
		t.Fatal("NewBuffer did not get back the Buffer kept ready, emptied")
	}
	if s := p.Stats(); s.ReadyRetained != 0 {
		t.Fatalf("ReadyRetained %d while the Buffer is in use", s.ReadyRetained)
	}
	b.Free()
	p.Trim()
	if s := p.Stats(); s.ReadyRetained != 0 || s.Retained != 0 {
		t.Fatalf("after Trim: ReadyRetained %d, Retained %d", s.ReadyRetained, s.Retained)
	}
	p.NewBuffer(0).Free()
	if !ptest.CollectUntil(func() bool { return p.Stats().Retained == 0 }) {
		t.Fatalf("idle trimming left %d bytes", p.Stats().Retained)
	}
	// Storage of another size than the next Buffer's goes back to its
	// class, not to the slot.
	b = p.NewBuffer(100 << 10)
	b.Free()
	if s := p.Stats(); s.ReadyRetained != 0 {
		t.Fatalf("a Buffer of 100 KiB was kept ready where the pool learnt 4 KiB: ReadyRetained %d", s.ReadyRetained)
	}
}

// TestSizerLearnsApartFromItsPool: Buffers from a Sizer teach the Sizer,
// not the pool, and start at what the Sizer learnt, whatever the pool's
// other Buffers reach.
func TestSizerLearnsApartFromItsPool(t *testing.T) {
	ptest.OneP(t)
	p := newPool(t, allocator{}, bytepool.Config{})
	lines := bytepool.Sizer{Pool: p}
	for range 2 * bytepool.LearnWindow {
		use(p.NewBuffer(0), 100<<10)
		use(lines.NewBuffer(), 200)
	}
	if got, want := p.Stats().BufferSize, p.ClassSize(100<<10); got != want {
		t.Fatalf("the pool learnt %d, want %d", got, want)
	}
	if got, want := lines.Size(), p.ClassSize(200); got != want {
		t.Fatalf("the Sizer learnt %d, want %d", got, want)
	}
	if b := lines.NewBuffer(); b.Cap() != p.ClassSize(200) {
		t.Fatalf("a Buffer of the Sizer starts at %d, want %d", b.Cap(), p.ClassSize(200))
	} else {
		b.Free()
	}
}

// TestNewBufferNegativePanicsWithPrefix: a negative size is a bug of the
// caller's.
func TestNewBufferNegativePanicsWithPrefix(t *testing.T) {
	defer func() {
		if r, _ := recover().(string); !strings.HasPrefix(r, "bytepool: ") {
			t.Fatalf("recover() = %q", r)
		}
	}()
	bytepool.Default().NewBuffer(-1)
}

// TestLearningIsPerP: each P publishes from its own window; with every P
// teaching the same size, the size is learnt within a window per P.
func TestLearningIsPerP(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{})
	procs := runtime.GOMAXPROCS(0)
	ptest.OnEachP(procs, func() {
		for range bytepool.LearnWindow + 1 {
			use(p.NewBuffer(0), 3000)
		}
	})
	if got, want := p.Stats().BufferSize, p.ClassSize(3000); got != want {
		t.Fatalf("learnt %d after a window on each P, want %d", got, want)
	}
}
