package bytepool

import (
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/poolkit/poolkit/exchange"
	"github.com/poolkit/poolkit/internal/cacheline"
	"github.com/poolkit/poolkit/internal/nocopy"
	"github.com/poolkit/poolkit/internal/shard"
)

// Pool keeps byte buffers of size classes for reuse: MinSize, then four
// classes per power of two, 2^k × 5/4, 6/4, 7/4 and 8/4, up to MaxSize, so
// that a buffer's capacity is at most a quarter above what was asked for.
//
// Each class has two per-P tiers, in one shard.Local, and one shared exchange
// behind them:
//
//   - the stack: owner-only, up to Config.Depth buffers per P, no atomic
//     read-modify-write (the fast path);
//   - the spill: up to Config.Spill buffers per P, into which the owner
//     moves the oldest half of a full stack and from which it refills an
//     empty one (one atomic operation per move), and which other Ps steal
//     from;
//   - the exchange (a lock-free ring by default), shared by all Ps.
//
// Get takes from the calling P's stack, then its spill, then another P's
// spill, then the exchange, then allocates; Put files on the calling P's
// stack (moving the older half of a full stack to its spill), then, if they
// are full, in a larger stack and spill if the budget allows (see below),
// then in the exchange, then drops.
// A P's stack and spill together give buffers back newest first, so a burst
// of Gets reuses first what a burst of Puts returned last. Only a buffer on
// another P's stack is out of reach.
//
// The byte budget [Config.MaxRetained] follows demand. New reserves the
// exchanges, within a quarter of it; the per-P tiers start with no room. A
// Put that finds its class's tiers full grows them one step, as long as
// the budget has room: the stacks double from 1 to Depth, then the spills
// from Depth to Spill, so a class reaches c buffers per P within the first
// burst that needs them, in about log2(c) + 3 steps, and the next burst
// allocates nothing. A class that goes idle (see [Config.IdleCycles]) gives
// its room back; a class that needs room when the budget is spent takes it
// from the classes that served no Get since the last GC cycle. Room is
// counted for every P, (stack + spill) × GOMAXPROCS × Size per class, since
// each P may fill its own: one P's burst can keep up to about
// MaxRetained / GOMAXPROCS bytes. [Stats.MaxRetained] reports the bound as it
// stands, at most MaxRetained; if GOMAXPROCS grows later (Go follows cgroup
// CPU limits), every new P gets a stack and a spill of its class's size, so
// the bound grows by (Depth + Spill) × Size per class and new P until the
// class is resized. Retained memory that is not reused is released at GC
// cycles (see [Config.IdleTimeout] and Config.IdleCycles) without any
// goroutine of the pool's own; Trim releases it at once (see Trim for the
// little it must leave to the next GC cycles, and the bound that holds with
// the GC off).
//
// The zero Pool is ready to use, with the defaults of the zero [Config]: on
// first use it makes itself as New(Config{}) would, in place, and then costs
// what a Pool from New costs.
//
// A Pool is safe for concurrent use by any number of goroutines. A Put
// synchronizes before the Get that returns the same buffer. A Pool must not be
// copied after first use.
type Pool struct {
	_ nocopy.NoCopy
	// hot holds what the fast path reads of each class, 16 bytes a class,
	// indexed by hotIndex, which the fast path computes from a size in a few
	// instructions (masked to 8 bits: no bounds check): hot[minIndex+i] is
	// classes[i]. The entries below minIndex (and 252, see hotIndex), which
	// sizes below MinSize reach, are copies of the smallest class's, so
	// that Get needs no max(n, MinSize); the others have size -1. Each
	// entry's local changes when the budget resizes its class; its size is
	// written once, by init, as are the fields below (before limit). classes
	// holds the rest of each class, from MinSize up.
	hot [256]hotClass
	// limit is MaxSize, stored last by init (atomically), so that whoever
	// loads it non-zero sees the rest of the Pool made; 0 until then (a zero
	// Pool before its first use). Get's first compare reads it.
	limit uintptr
	// once runs init for a zero Pool (see lazy).
	once sync.Once
	// buffers caches the headers of Buffers that NewBuffer handed out and
	// Buffer.Free gave back.
	buffers sync.Pool
	// learn learns the size of the pool's Buffers (see learner).
	learn learner
	// ready is the Buffers Free keeps for the next NewBuffer on the same P
	// (see readyState), and readyMax the most storage one keeps; made by
	// init.
	ready    *readyState
	readyMax int

	classes   []class
	minSize   int
	minIndex  int // hotIndex(minSize-1)
	maxSize   int
	zeroOnPut bool
	alloc     Allocator
	cfg       Config
	procs     int

	// Hits on the per-P stacks are counted by shard.Local itself, per P,
	// inside the section it runs pinned (Local.Stats): the fast path pays no
	// counter of its own. Puts filed on the per-P stacks are not counted.
	// See docs/decisions/0005-bytepool.md.
	//
	// oversize counts Gets above maxSize; unfiled counts Puts of slices no
	// class takes. Both are cold paths.
	oversize atomic.Uint64
	unfiled  atomic.Uint64
	// trim is the state of GC-driven trimming; guarded by trimMu, which is
	// never taken on the Get/Put path.
	trimMu sync.Mutex
	trim   []trimState
	ticks  atomic.Uint64 // GC ticks observed; for tests
	// reserved is the bytes the classes' capacities add up to (see grow);
	// at most cfg.MaxRetained. Guarded by trimMu.
	reserved int64
}

// hotClass is the part of a class the fast path reads. size is read-only
// after New; local changes when the budget resizes the class (see resize).
//
// The per-P stacks hold only the address of each buffer's first byte: the
// class gives its capacity, so a Put writes one word to the stack instead of
// a three-word slice, and a Get rebuilds the slice (see slice). An address
// kept as an unsafe.Pointer keeps a heap buffer alive exactly as the slice
// did. See docs/decisions/0005-bytepool.md, section 2.
type hotClass struct {
	// local is class.local (a *tiers, read and written atomically), or
	// noTiers when the class has no per-P tiers or every Get and Put must
	// take the long way (ZeroOnPut, or the poolkit_debug table), so that the
	// fast path tests one field, not three; nil only in a Pool not yet
	// made. It comes first, so that the entry's address is the field's, and
	// the fast path keeps one.
	local unsafe.Pointer
	// size is the class size, of every buffer local holds, written once by
	// init. Get reads it after loading limit, which init stores last; Put
	// reads it first, plainly, so that a zero Pool's Put may read it while
	// another goroutine's first use makes the Pool: a benign race (a word is
	// never torn, and the Go memory model has the read return 0 or the
	// size), after which Put reaches the rest of the Pool only through an
	// atomic load (a class's tiers, or limit in putFull and putOther). The
	// race build loads limit first instead.
	size int
}

// The fast path reads limit and a class's tiers with the atomic functions,
// not atomic types or helpers: their methods are inlined calls, and each
// inlined call the compiler cannot pin to an instruction of the caller's
// line costs a no-op instruction (an inline mark).

// tiers is the type of a class's per-P tiers.
type tiers = shard.Local[unsafe.Pointer]

// setTiers sets the hot entry's local.
func (h *hotClass) setTiers(l *tiers) {
	atomic.StorePointer(&h.local, unsafe.Pointer(l))
}

// noTiers is the hot entry's local of a class without per-P tiers: a Local
// never made, whose Stack is nil for every P id, so that Get needs no nil
// test of its own. Nothing else is called on it.
var noTiers tiers

// hotLocal is what hot holds for tiers l (nil: none).
func hotLocal(l *tiers) *tiers {
	if l == nil {
		return &noTiers
	}
	return l
}

// class is one size class. Its counters are cold-path atomics on cache lines
// of the class's own.
type class struct {
	size int
	// local is the class's per-P tiers, nil while the budget gives it none;
	// resize replaces it. depth and spill are its per-P capacity (0 and 0
	// when local is nil), reserved the bytes it takes from the budget;
	// guarded by Pool.trimMu.
	local        atomic.Pointer[tiers]
	depth, spill int
	reserved     int64
	full         atomic.Bool // the class cannot grow (see grow)
	replaced     []replaced  // tiers resize replaced; guarded by Pool.trimMu
	resizes      uint64      // calls of resize; guarded by Pool.trimMu
	// drop releases a buffer of the per-P tiers Retire discarded, from the
	// runtime cleanup that empties them. It must not reach the Pool, or the
	// Pool could never be collected: it holds the class and the allocator
	// only.
	drop func(unsafe.Pointer)
	ex   exchange.Exchange[[]byte]
	_    cacheline.Pad
	// Updated off the fast path only. Gets served by the exchange and Puts
	// filed in it are not counted here: the exchange counts its Parks and
	// Unparks itself (exchange.Exchange.Counts), and exDrained counts the
	// Unparks that were drains, not Gets (see class.exchangeHits). That
	// saves two locked instructions per buffer that goes through the
	// exchange (docs/decisions/0005-bytepool.md, section 5).
	exDrained  atomic.Uint64 // buffers Trim, idle trimming or releaseAll took from the exchange
	allocs     atomic.Uint64 // Gets that allocated a class buffer
	allocFails atomic.Uint64 // of those, allocator failures (fell back to make)
	drops      atomic.Uint64 // Puts filed under this class but dropped (full)
	released   atomic.Uint64 // buffers released by Trim or idle trimming
	// drainedHits and drainedSteals are the pops of the current per-P
	// tiers that were drains (Trim, idle trimming), not Gets: Local counts
	// them as hits or steals (see drainLocal). pastHits and pastSteals are
	// the Gets served by the tiers resize replaced.
	drainedHits, drainedSteals atomic.Uint64
	pastHits, pastSteals       atomic.Uint64
	_                          cacheline.Pad
}

// trimState is the GC-driven trimming state of one class. Guarded by
// Pool.trimMu.
type trimState struct {
	localSeen, exSeen uint64    // hit counts at the previous tick
	localIdle, exIdle int       // consecutive ticks without a hit
	localUsed, exUsed time.Time // last tick that saw a hit
}

// New returns a [Pool] configured by cfg. It returns an error wrapping
// [ErrInvalidConfig], naming the field, iff a field is out of range.
func New(cfg Config) (*Pool, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	p := new(Pool)
	p.once.Do(func() { p.init(cfg) })
	return p, nil
}

// lazy makes a zero Pool, in place, with the defaults of the zero Config, on
// its first use; it returns once the Pool is made, whoever made it.
func (p *Pool) lazy() {
	p.once.Do(func() {
		cfg, err := Config{}.withDefaults()
		if err != nil {
			panic("bytepool: bug: the zero Config was rejected: " + err.Error())
		}
		p.init(cfg)
	})
}

// made reports whether p is made (see Pool.limit).
func (p *Pool) made() bool { return atomic.LoadUintptr(&p.limit) != 0 }

// ensure makes p if it is a zero Pool not yet made; a load on a Pool made.
func (p *Pool) ensure() {
	if !p.made() {
		p.lazy()
	}
}

// init makes p, a zero Pool, with cfg, which withDefaults has checked; run
// once, under p.once. Everything it writes is written before limit (see
// Pool.limit): a Get that finds limit 0 and a Put or Stats of a Pool not yet
// made go through lazy, which waits for init to end.
func (p *Pool) init(cfg Config) {
	plans := split(cfg)
	p.classes = make([]class, len(plans))
	p.minSize = cfg.MinSize
	p.minIndex = hotIndex(cfg.MinSize - 1)
	p.maxSize = cfg.MaxSize
	p.zeroOnPut = cfg.ZeroOnPut
	p.alloc = cfg.Allocator
	p.cfg = cfg
	p.procs = runtime.GOMAXPROCS(0)
	p.trim = make([]trimState, len(plans))
	for i := range p.hot {
		p.hot[i].setTiers(&noTiers)
	}
	sizes := make([]int, len(p.hot))
	for i := range sizes {
		sizes[i] = -1 // no class: Put takes the long way
	}
	for _, i := range p.minAliases() {
		sizes[i] = cfg.MinSize
	}
	now := time.Now()
	alloc := cfg.Allocator
	for i, pl := range plans {
		cl := &p.classes[i]
		cl.size = pl.size
		size := cl.size
		cl.drop = func(ptr unsafe.Pointer) {
			b := unsafe.Slice((*byte)(ptr), size)
			cl.released.Add(1)
			debugForget(b)
			release(alloc, b)
		}
		if pl.exCap == 0 {
			cl.ex = exchange.None[[]byte]{}
		} else {
			cl.ex = exchange.New[[]byte](cfg.Exchange, pl.exCap)
		}
		p.reserved += int64(pl.exCap) * int64(size)
		if hotIndex(size-1) != p.minIndex+i || hotIndex(size) != p.minIndex+i+1 {
			panic("bytepool: bug: class sizes and hotIndex disagree")
		}
		sizes[p.minIndex+i] = size
		p.trim[i] = trimState{localUsed: now, exUsed: now}
	}
	for i, size := range sizes {
		p.hot[i].size = size
	}
	p.learn.windows.Store(newWindowTable(p.procs))
	p.ready = &readyState{cur: unsafe.Pointer(newReadyTable(p.procs))}
	p.readyMax = readyMax(cfg, p.procs)
	p.reserved += int64(p.readyMax) * int64(p.procs)
	// Buffers that are not the GC's (the allocator's, or mappings Put into
	// a heap pool) and those the debug table tracks must be given back when
	// the Pool is collected. The cleanup holds the classes, which do not
	// reach the Pool. (For a Pool in a package variable, such as Default's,
	// the runtime makes it a no-op: such a Pool is never collected.)
	runtime.AddCleanup(p, releaseAll, releaseArg{p.classes, p.ready, alloc})
	armTrim(p)
	atomic.StoreUintptr(&p.limit, uintptr(cfg.MaxSize))
}

// Get returns a slice of length n and capacity at least n. For n <= MaxSize
// the capacity is that of n's size class (the smallest class >= n, and
// >= MinSize: at most n + n/4, rounded up to a multiple of an eighth of
// the power of two below n) and the slice comes from the pool when one is
// free; above MaxSize it is a plain make([]byte, n), not pooled.
//
// The contents of a reused buffer are unspecified: they are whatever its
// previous holder left, up to its capacity. Use GetZeroed, or
// [Config.ZeroOnPut], where that matters. Get panics if n is negative.
//
//go:nosplit
func (p *Pool) Get(n int) []byte {
	// Get and Put are nosplit: they run no stack check (two instructions
	// of about seventy, and the alignment padding they shift). Their frames
	// are small and fixed, the fast path calls only the runtime's pin and
	// unpin, nosplit too, and the slow paths are calls of functions that
	// check; the linker refuses a chain of nosplit functions that could
	// overrun the stack guard. See docs/decisions/0005-bytepool.md.
	//
	// One unsigned compare sends n <= 0, n > MaxSize and a Pool not yet
	// made to getOther.
	if uint(n-1) >= uint(atomic.LoadUintptr(&p.limit)) {
		return p.getOther(n)
	}
	// Local.Pop, written out so that the stack's pop is inlined here and a
	// hit returns straight from the pinned section; a miss goes on pinned
	// in getSpill. The class's tiers are loaded after pinning (see resize);
	// a class without tiers has noTiers, whose Stack is nil.
	h := &p.hot[hotIndex(n-1)]
	size := h.size
	pid, l := shard.Enter(), (*tiers)(atomic.LoadPointer(&h.local)) // in this order
	s := l.Stack(pid)
	if ptr, _ := s.Pop(); ptr != nil { // a buffer's address is never nil
		// No debugOnGet: the poolkit_debug build takes the long way.
		shard.Exit()
		return slice(ptr, n, size)
	}
	return p.getSpill(l, s, n)
}

// getSpill is Get after the calling P's stack s of tiers l missed, still in
// the pinned section that loaded l: it tries s's spill and the other Ps'
// (Local.PopSpill), ends the section, and goes on to getSlow. If s is nil,
// Get could not use l pinned (no tiers, a P beyond its table, or the
// synchronised builds), and getSlow tries the class's tiers first.
func (p *Pool) getSpill(l *tiers, s *shard.Stack[unsafe.Pointer], n int) []byte {
	ptr, ok := l.PopSpill(s)
	shard.Exit()
	if ok {
		b := slice(ptr, n, p.classes[p.classIndex(n)].size)
		debugOnGet(b)
		return b
	}
	return p.getSlow(n, s == nil)
}

// hotIndex returns the index in Pool.hot of the class of size m+1, or, for
// any 0 <= m < 2^53, of the smallest class above m: the float64 of m holds
// its exponent and, right below it, the two bits that follow m's leading
// one, which name the quarter of its power of two (see Config.MinSize); 50
// bits down, they are one number, 4 × bits.Len(m) + the quarter + a
// constant, that consecutive classes take in turn. It is a conversion and a
// shift, where bits.Len and a shift by it take three times the
// instructions. m of 1, and -1 (a Put of a nil slice, c-1), give 252;
// m = 0, 2 and 3 give 0 and 2; each is below the index of any class (MinSize
// is at least 8): the mask keeps every index below 256, as the table.
func hotIndex(m int) int {
	return int(math.Float64bits(float64(m)) >> 50 & 255)
}

// hotSize is hotIndex's inverse: the size of the class at index i, the
// smallest quarter step (2^k × 5/4, 6/4, 7/4 or 8/4) at or above every m+1
// with hotIndex(m) == i, for 3 <= m < 2^62 (4 <= i < 248); math.MaxInt
// where that does not fit an int. An index is 4 × (k - 1) + q for m in
// [2^k × (4+q)/4, 2^k × (5+q)/4): the class is 2^k × (5+q)/4.
func hotSize(i int) int {
	k, q := i>>2+1, i&3
	if k-2 >= bits.UintSize-4 { // 8 << (k-2) would overflow
		return math.MaxInt
	}
	return (5 + q) << (k - 2)
}

// minAliases returns the indexes of hot that sizes below MinSize reach:
// those below minIndex, and 252 (m = 1, see hotIndex).
func (p *Pool) minAliases() []int {
	is := []int{252}
	for i := range p.minIndex {
		is = append(is, i)
	}
	return is
}

// slice returns the slice of length n and capacity size whose array starts at
// ptr, for 0 <= n <= size. It is unsafe.Slice(ptr, size)[:n] without the
// checks the compiler cannot drop there (a nil ptr, a negative or overflowing
// size), none of which can fail for an address a per-P stack held: Put filed
// only the first element of a buffer of exactly size bytes.
func slice(ptr unsafe.Pointer, n, size int) []byte {
	return *(*[]byte)(unsafe.Pointer(&sliceHeader{ptr, n, size}))
}

// sliceHeader has the memory layout of a slice (see unsafe rule 1: converting
// a *sliceHeader to a *[]byte is valid because the two types share it).
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// classOf returns the capacity of a Get(n): n's class, or n itself above
// MaxSize; 0 for n <= 0.
func (p *Pool) classOf(n int) int {
	if uint(n-1) < uint(p.maxSize) {
		return p.hot[hotIndex(n-1)].size
	}
	return max(n, 0)
}

// classIndex returns the class of a Get(n), for 0 <= n <= maxSize: the
// smallest class of at least n bytes.
func (p *Pool) classIndex(n int) int {
	return hotIndex(max(n, p.minSize)-1) - p.minIndex
}

// GetZeroed is Get with every byte of the result zeroed, up to its capacity.
func (p *Pool) GetZeroed(n int) []byte {
	b := p.Get(n)
	clear(b[:cap(b)])
	return b
}

// getOther is Get for n <= 0 and n > MaxSize, and the first Gets of a zero
// Pool, which make it.
func (p *Pool) getOther(n int) []byte {
	switch {
	case n < 0:
		panic("bytepool: Get: negative size")
	case n == 0:
		return p.Get(1)[:0]
	case !p.made():
		p.lazy()
		return p.Get(n)
	}
	p.oversize.Add(1)
	return make([]byte, n)
}

// getSlow is Get, for 1 <= n <= maxSize, when the per-P tiers had nothing:
// the calling P's stack and spill and every other P's spill. If local, Get
// could not reach them pinned (Local.Stack returned nil) and getSlow tries
// them first.
func (p *Pool) getSlow(n int, local bool) []byte {
	cl := &p.classes[p.classIndex(n)]
	if local {
		if ptr, ok := cl.pop(); ok {
			b := slice(ptr, n, cl.size)
			debugOnGet(b)
			return b
		}
	}
	if b, ok := cl.ex.Unpark(); ok {
		debugOnGet(b)
		return b[:n]
	}
	cl.allocs.Add(1)
	b, err := p.alloc.Allocate(cl.size)
	if err != nil || len(b) != cl.size || cap(b) != cl.size {
		if err == nil && b != nil && p.alloc.Owns(b) {
			p.alloc.Free(b) // a misbehaving allocator: do not leak its memory
		}
		cl.allocFails.Add(1)
		b = make([]byte, cl.size)
	}
	return b[:n]
}

// Put gives b back for reuse; neither b nor any slice of its array may be
// used afterwards. Put(nil) does nothing.
//
// b is filed under the largest class its capacity covers, and re-sliced to
// that class size; a slice whose capacity is below MinSize, or at least twice
// MaxSize, is dropped. Slices the pool never gave out are accepted. When the
// class is at its retention bound, b is dropped: left to the garbage
// collector, or freed through the [Allocator] if it owns b.
//
// A filed slice keeps its whole backing array alive, as any slice does, but
// the retention bound counts only its class size: Put of a small slice of a
// large array (big[:0:64], or the tail of big) pins all of big until that
// buffer leaves the pool. Put buffers that came from the pool, or slices
// that span their array.
//
//go:nosplit
func (p *Pool) Put(b []byte) {
	// nosplit: see Get.
	//
	// Fast path: a buffer of exactly a class size (every buffer the pool
	// allocated) and a class with per-P tiers (no zeroing, no debug table;
	// see hotClass). A class size c is the class of c-1 (hotIndex).
	// Everything else, nil included (cap 0 reads entry 252, a copy of the
	// smallest class, whose size is not 0), goes through putOther.
	c := cap(b)
	h := &p.hot[hotIndex(c-1)]
	if raceEnabled {
		p.ensure() // see hotClass.size
	}
	if c != h.size {
		p.putOther(b)
		return
	}
	// Local.Push, written out so that the stack's push is inlined here and
	// a push the stack takes returns straight from the pinned section; a
	// full stack goes on pinned in putSpill. The class's tiers are loaded
	// after pinning (see resize).
	ptr := unsafe.Pointer(unsafe.SliceData(b))
	pid, l := shard.Enter(), (*tiers)(atomic.LoadPointer(&h.local)) // in this order
	if l == nil {
		// A zero Pool not yet made, or being made (see hotClass.size).
		shard.Exit()
		p.putOther(unsafe.Slice((*byte)(ptr), c))
		return
	}
	s := l.Stack(pid)
	if s.Push(ptr) {
		shard.Exit()
		return
	}
	p.putSpill(l, s, ptr, c)
}

// putSpill is Put after the calling P's stack s of tiers l was full or nil,
// still in the pinned section that loaded l, for the buffer at ptr of class
// size c: it tries s's spill (Local.PushSpill), ends the section, and goes
// on to putFull.
func (p *Pool) putSpill(l *tiers, s *shard.Stack[unsafe.Pointer], ptr unsafe.Pointer, c int) {
	ok := l.PushSpill(s, ptr)
	shard.Exit()
	if !ok {
		p.putFull(unsafe.Slice((*byte)(ptr), c), s == nil)
	}
}

// putFull is Put's fast path when the calling P's stack and spill are full,
// or, if local, when Put could not reach them pinned (no tiers, or
// Local.Stack returned nil): cap(b) is a class size, unless Put read it
// while the Pool was being made. It recomputes the class, so that Put keeps
// less alive across its calls.
func (p *Pool) putFull(b []byte, local bool) {
	p.ensure() // see hotClass.size
	cl := &p.classes[p.classIndex(cap(b))]
	if cap(b) != cl.size || p.zeroOnPut || debugTracking {
		// A size Put read while another goroutine made the Pool (see
		// hotClass.size), or classes whose hot entries have noTiers so
		// that every Put takes the long way.
		p.putOther(b)
		return
	}
	if local && cl.push(unsafe.Pointer(unsafe.SliceData(b))) {
		return
	}
	p.putSlow(cl, b)
}

// putOther is Put for everything but the fast path: too small or too large
// capacities, foreign capacities (re-sliced to their class), ZeroOnPut and the
// debug table.
func (p *Pool) putOther(b []byte) {
	if !p.made() {
		p.lazy()
		p.Put(b)
		return
	}
	c := cap(b)
	if c < p.minSize {
		if c > 0 {
			p.unfiled.Add(1)
		}
		return
	}
	if c >= 2*p.maxSize {
		p.unfiled.Add(1)
		release(p.alloc, b)
		return
	}
	// The largest class c covers: the smallest class of at least c bytes,
	// or the one below it.
	k := p.classIndex(min(c, p.maxSize))
	if p.classes[k].size > c {
		k--
	}
	cl := &p.classes[k]
	size := cl.size
	b = b[:0:size]
	debugOnPut(b) // may panic; nothing is pinned here
	if p.zeroOnPut {
		clear(b[:size])
	}
	if cl.push(unsafe.Pointer(unsafe.SliceData(b))) {
		return
	}
	p.putSlow(cl, b)
}

// putSlow files b, of class cl, when the calling P's tiers had no room:
// in per-P tiers grown one step if the budget allows (see grow), else in
// the exchange, else it drops b.
func (p *Pool) putSlow(cl *class, b []byte) {
	if p.grow(cl, b) || cl.ex.Park(b) {
		return
	}
	cl.drops.Add(1)
	debugForget(b)
	release(p.alloc, b)
}

// procsNow returns GOMAXPROCS: the number of per-P stacks a Local made now
// has.
func (p *Pool) procsNow() int { return runtime.GOMAXPROCS(0) }

// release gives a buffer the pool lets go back to the allocator that made
// it: the pool's own if it owns b, else the Mmap that mapped it, if any (a
// buffer Put into a pool other than its own); heap buffers are left to the
// garbage collector.
func release(a Allocator, b []byte) {
	if a.Owns(b) {
		a.Free(b)
	} else {
		freeMapped(b)
	}
}

// Trim releases the buffers the pool retains, before it returns, whatever
// the allocator and the GC setting: every buffer in the exchanges and in the
// per-P tiers, those of other Ps included. The tiers the calling goroutine
// can reach (the stack of the P it runs on, and every spill) it empties at
// once; a class whose other Ps' stacks still hold buffers gets fresh tiers
// of the same room, and the old ones are released once every Get and Put
// that could still be using them has ended: Trim stops the world for that
// (runtime.ReadMemStats; a few microseconds), at most once per call.
// Retained bytes in [Stats] are zero afterwards, and the allocator holds
// nothing for the pool, apart from Gets and Puts that run concurrently.
// Trim keeps each class's room; idle trimming gives it back.
//
// So the memory a pool holds beyond what Stats counts as retained, whatever
// the allocator and GC setting, is at most, per class, maxPending (2) sets
// of other Ps' stacks of the tiers the budget replaced (Depth ×
// (GOMAXPROCS − 1) buffers each), waiting for two GC cycles or a third
// replacement, which releases them at once (see resize). A GOMAXPROCS
// increase adds, until the next cycle, the per-P tiers of the old count (see
// Pool).
func (p *Pool) Trim() {
	if !p.made() {
		return // a zero Pool not yet made holds nothing
	}
	p.trimMu.Lock()
	defer p.trimMu.Unlock()
	p.replaceReady()
	pending := len(p.ready.old) > 0
	for i := range p.classes {
		p.drainLocal(i)
		p.drainExchange(i)
		pending = pending || len(p.classes[i].replaced) > 0
	}
	if pending {
		waitPinned()
		p.rotateReady(true)
		for i := range p.classes {
			p.settleReplaced(&p.classes[i], true)
		}
	}
}

// drainLocal releases what class i's per-P tiers hold that the calling
// goroutine can pop, at once; if other Ps' stacks still hold buffers, it
// gives the class fresh tiers of the same room and queues the old ones with
// the replaced sets, for Trim to release. Called with trimMu held.
func (p *Pool) drainLocal(i int) {
	cl := &p.classes[i]
	l := cl.local.Load()
	if l == nil {
		return
	}
	before := l.Stats()
	var drained uint64
	for {
		ptr, ok := l.Pop()
		if !ok {
			break
		}
		drained++
		cl.drop(ptr)
	}
	cl.countDrains(l, before, drained)
	if l.Len() > 0 {
		p.replaceTiers(i, cl.depth, cl.spill, false)
	}
}

// countDrains notes that drained of l's pops since its counts were before
// were drains, not Gets. Each Pop counts a hit or a steal on the Local
// (Local.Stats); concurrent Gets may have counted too, so a drain's pop is
// taken for a steal only as far as the steals grew.
func (cl *class) countDrains(l *tiers, before shard.Stats, drained uint64) {
	if drained == 0 {
		return
	}
	steals := min(l.Stats().Steals-before.Steals, drained)
	cl.drainedSteals.Add(steals)
	cl.drainedHits.Add(drained - steals)
}

func (p *Pool) drainExchange(i int) { drain(&p.classes[i], p.alloc) }

func drain(cl *class, a Allocator) {
	for {
		b, ok := cl.ex.Unpark()
		if !ok {
			return
		}
		cl.exDrained.Add(1)
		cl.released.Add(1)
		debugForget(b)
		release(a, b)
	}
}

// exchangeHits returns the Gets served by the class's exchange: its Unparks
// less those that were drains. exDrained is read first: a drain counts
// itself after its Unpark, so every drain counted here is also in unparked,
// and the difference cannot wrap around. Exact once the pool is quiescent.
func (cl *class) exchangeHits() uint64 {
	drained := cl.exDrained.Load()
	_, unparked := cl.ex.Counts()
	return unparked - drained
}

// parked returns the Puts filed in the class's exchange.
func (cl *class) parked() uint64 {
	parked, _ := cl.ex.Counts()
	return parked
}

type releaseArg struct {
	classes []class
	ready   *readyState
	alloc   Allocator
}

// releaseAll runs from a runtime cleanup once a Pool is unreachable: it gives
// back everything the pool retained. No goroutine can use the pool any more
// (an operation in progress would keep it reachable), so every P's stack and
// spill is drained here (shard.Local.DrainAll).
func releaseAll(a releaseArg) {
	for i := range a.classes {
		cl := &a.classes[i]
		if l := cl.local.Load(); l != nil {
			l.DrainAll(cl.drop)
		}
		for _, r := range cl.replaced {
			r.l.DrainAll(cl.drop)
		}
		drain(cl, a.alloc)
	}
	releaseReadyAll(a.ready, a.alloc)
}
