package bytepool

import (
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

// Pool keeps byte buffers of power-of-two size classes for reuse.
//
// Each class has two per-P tiers, in one shard.Local, and one shared exchange
// behind them:
//
//   - the stack: owner-only, Config.Depth buffers per P, no atomic
//     read-modify-write (the fast path);
//   - the spill: Config.Spill buffers per P, into which the owner moves the
//     oldest half of a full stack and from which it refills an empty one
//     (one atomic operation per move), and which other Ps steal from;
//   - the exchange (a lock-free ring by default), shared by all Ps.
//
// Get takes from the calling P's stack, then its spill, then another P's
// spill, then the exchange, then allocates; Put files on the calling P's
// stack (moving the older half of a full stack to its spill), then in the
// exchange, then drops.
// A P's stack and spill together give buffers back newest first, so a burst
// of Gets reuses first what a burst of Puts returned last. Only a buffer on
// another P's stack is out of reach.
//
// Retention is bounded by Config.Depth and Config.Spill per P and class, the
// exchange capacity per class and the byte budget Config.MaxRetained, split
// among the classes by New (see Stats.MaxRetained). The per-P part is
// computed for GOMAXPROCS as it was when New ran; if GOMAXPROCS grows later
// (Go follows cgroup CPU limits), every new P gets a stack and a spill of the
// planned size, so the bound grows by (Depth + Spill) × Size per class and
// new P: the budget is not re-split. Stats.MaxRetained reports the bound as
// it stands. Retained memory that is not reused is released at
// GC cycles (see Config.IdleTimeout and Config.IdleCycles) without any
// goroutine of the pool's own; Trim releases it at once (see Trim for the
// little it must leave to the next GC cycle, and the bound that holds with
// the GC off).
//
// The zero Pool is ready to use, with the defaults of the zero Config: on
// first use it makes a Pool with New(Config{}) and forwards every call to it,
// which costs each call a few nanoseconds that a Pool from New does not pay.
//
// A Pool is safe for concurrent use by any number of goroutines. A Put
// synchronizes before the Get that returns the same buffer. A Pool must not be
// copied after first use.
type Pool struct {
	_ nocopy.NoCopy
	// zero is, for the zero Pool only (maxSize 0), the Pool it made on first
	// use and forwards to; made under zeroOnce.
	zero     atomic.Pointer[Pool]
	zeroOnce sync.Once
	// buffers caches the headers of Buffers that NewBuffer handed out and
	// Buffer.Free gave back.
	buffers sync.Pool

	// Read-only after New. hot holds what the fast path reads of each class,
	// 16 bytes a class, indexed by the class's log2 size, so that the fast
	// path indexes it with the shift it computes anyway (masked to 6 bits:
	// no bounds check, no subtraction); the entries of no class have
	// putSize -1 and no local. classes holds the rest, from MinSize up.
	hot       [64]hotClass
	classes   []class
	minSize   int
	minMask   uint // minSize-1
	minShift  int  // log2(minSize) = bits.Len(minMask)
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
}

// hotClass is the part of a class the fast path reads. Read-only after New.
//
// The per-P stacks hold only the address of each buffer's first byte: the
// class gives its capacity, so a Put writes one word to the stack instead of
// a three-word slice, and a Get rebuilds the slice (see slice). An address
// kept as an unsafe.Pointer keeps a heap buffer alive exactly as the slice
// did. See docs/decisions/0005-bytepool.md, "Fast path".
type hotClass struct {
	// putSize is the capacity Put's fast path files as is: the class size,
	// or -1 when every Put must take the long way (ZeroOnPut, or the
	// poolkitdebug table), so that the fast path tests one field, not three.
	putSize int
	local   *shard.Local[unsafe.Pointer] // nil when the budget leaves no per-P depth
}

// class is one size class. Its counters are cold-path atomics on cache lines
// of the class's own.
type class struct {
	size  int
	depth int                          // per-P stack depth; 0 when local is nil
	spill int                          // per-P spill; 0 without one
	local *shard.Local[unsafe.Pointer] // nil when the budget leaves no per-P depth
	ex    exchange.Exchange[[]byte]
	_     cacheline.Pad
	// Updated off the fast path only. Gets served by the exchange and Puts
	// filed in it are not counted here: the exchange counts its Parks and
	// Unparks itself (exchange.Exchange.Counts), and exDrained counts the
	// Unparks that were drains, not Gets (see class.exchangeHits). That
	// saves two locked instructions per buffer that goes through the
	// exchange (docs/decisions/0005-bytepool.md, "Bursts").
	exDrained  atomic.Uint64 // buffers Trim, idle trimming or releaseAll took from the exchange
	allocs     atomic.Uint64 // Gets that allocated a class buffer
	allocFails atomic.Uint64 // of those, allocator failures (fell back to make)
	drops      atomic.Uint64 // Puts filed under this class but dropped (full)
	released   atomic.Uint64 // buffers released by Trim or idle trimming
	// drainedHits and drainedSteals are the pops of the per-P tiers that
	// were drains (Trim, idle trimming), not Gets: Local counts them as hits
	// or steals (see drainLocal).
	drainedHits, drainedSteals atomic.Uint64
	_                          cacheline.Pad
}

// trimState is the GC-driven trimming state of one class. Guarded by
// Pool.trimMu.
type trimState struct {
	localSeen, exSeen uint64    // hit counts at the previous tick
	localIdle, exIdle int       // consecutive ticks without a hit
	localUsed, exUsed time.Time // last tick that saw a hit
	// retired says that drainLocal retired the class's stacks, at tick
	// retiredTick (see drainLocal).
	retired     bool
	retiredTick uint64
}

// New returns a Pool configured by cfg. It returns an error wrapping
// ErrInvalidConfig, naming the field, iff a field is out of range.
func New(cfg Config) (*Pool, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	procs := runtime.GOMAXPROCS(0)
	plans := split(cfg, procs)
	p := &Pool{
		classes:   make([]class, len(plans)),
		minSize:   cfg.MinSize,
		minMask:   uint(cfg.MinSize - 1),
		minShift:  bits.Len(uint(cfg.MinSize - 1)),
		maxSize:   cfg.MaxSize,
		zeroOnPut: cfg.ZeroOnPut,
		alloc:     cfg.Allocator,
		cfg:       cfg,
		procs:     procs,
		trim:      make([]trimState, len(plans)),
	}
	for i := range p.hot {
		p.hot[i].putSize = -1 // no class: Put takes the long way
	}
	now := time.Now()
	alloc := cfg.Allocator
	for i, pl := range plans {
		cl := &p.classes[i]
		cl.size, cl.depth, cl.spill = pl.size, pl.depth, pl.spill
		if pl.depth > 0 {
			// The drop function runs from a runtime cleanup for stacks that
			// Retire discarded. It must not reach the Pool, or the Pool
			// could never be collected: it holds the class and the
			// allocator only.
			size := cl.size
			cl.local = shard.NewLocalSpill(pl.depth, pl.spill, func(ptr unsafe.Pointer) {
				b := unsafe.Slice((*byte)(ptr), size)
				cl.released.Add(1)
				debugForget(b)
				release(alloc, b)
			})
		}
		if pl.exCap == 0 {
			cl.ex = exchange.None[[]byte]{}
		} else {
			cl.ex = exchange.New[[]byte](cfg.Exchange, pl.exCap)
		}
		h := &p.hot[p.minShift+i]
		*h = hotClass{putSize: cl.size, local: cl.local}
		if cfg.ZeroOnPut || debugTracking {
			h.putSize = -1
		}
		p.trim[i] = trimState{localUsed: now, exUsed: now}
	}
	// Buffers that are not the GC's (the allocator's, or mappings Put into
	// a heap pool) and those the debug table tracks must be given back when
	// the Pool is collected. The cleanup holds the classes, which do not
	// reach the Pool.
	runtime.AddCleanup(p, releaseAll, releaseArg{p.classes, alloc})
	armTrim(p)
	return p, nil
}

// Get returns a slice of length n and capacity at least n. For n <= MaxSize
// the capacity is that of n's size class (the smallest power of two >= n and
// >= MinSize) and the slice comes from the pool when one is free; above
// MaxSize it is a plain make([]byte, n), not pooled.
//
// The contents of a reused buffer are unspecified: they are whatever its
// previous holder left, up to its capacity. Use GetZeroed, or
// Config.ZeroOnPut, where that matters. Get panics if n is negative.
func (p *Pool) Get(n int) []byte {
	// One unsigned compare sends n <= 0 and n > maxSize to getOther.
	if uint(n-1) >= uint(p.maxSize) {
		return p.getOther(n)
	}
	// For 1 <= n <= maxSize, the class size is 1<<shift, the smallest power
	// of two >= n and >= minSize. (shift&63 == shift; the mask spares the
	// compiler's check for shifts of 64 or more.)
	shift := bits.Len(uint(n-1) | p.minMask)
	if l := p.hot[shift&63].local; l != nil {
		// Local.Pop, written out so that the stack's pop is inlined here.
		s := l.Stack(shard.Enter())
		ptr, ok := s.Pop()
		if !ok {
			ptr, ok = l.PopSpill(s)
		}
		shard.Exit()
		if ok {
			b := slice(ptr, n, 1<<(shift&63))
			debugOnGet(b)
			return b
		}
		if s == nil {
			return p.getSlow(n, true)
		}
	}
	return p.getSlow(n, false)
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

// classIndex returns the class of a Get(n), for 0 <= n <= maxSize.
func (p *Pool) classIndex(n int) int {
	return bits.Len(uint(max(n, 1)-1)|p.minMask) - p.minShift
}

// GetZeroed is Get with every byte of the result zeroed, up to its capacity.
func (p *Pool) GetZeroed(n int) []byte {
	b := p.Get(n)
	clear(b[:cap(b)])
	return b
}

// getOther is Get for n <= 0 and n > maxSize, and every Get of the zero
// Pool.
func (p *Pool) getOther(n int) []byte {
	switch {
	case n < 0:
		panic("bytepool: Get: negative size")
	case n == 0:
		return p.Get(1)[:0]
	case p.maxSize == 0:
		return p.made().Get(n)
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
		if ptr, ok := cl.local.Pop(); ok {
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
// collector, or freed through the Allocator if it owns b.
//
// A filed slice keeps its whole backing array alive, as any slice does, but
// the retention bound counts only its class size: Put of a small slice of a
// large array (big[:0:64], or the tail of big) pins all of big until that
// buffer leaves the pool. Put buffers that came from the pool, or slices
// that span their array.
func (p *Pool) Put(b []byte) {
	// Fast path: a buffer of exactly a class size (every buffer the pool
	// allocated), no zeroing, no debug table (hotClass.putSize). Everything
	// else, nil included (cap 0 reads entry 63, of no class), goes through
	// putOther.
	c := cap(b)
	h := &p.hot[(bits.Len(uint(c))-1)&63]
	if c != h.putSize {
		p.putOther(b)
		return
	}
	if l := h.local; l != nil {
		// Local.Push, written out so that the stack's push is inlined here.
		ptr := unsafe.Pointer(unsafe.SliceData(b))
		s := l.Stack(shard.Enter())
		ok := s.Push(ptr) || l.PushSpill(s, ptr)
		shard.Exit()
		if ok {
			return
		}
		if s == nil {
			p.putFull(b, true)
			return
		}
	}
	p.putFull(b, false)
}

// putFull is Put's fast path when the calling P's stack and spill are full,
// or, if local, when Put could not reach them pinned (Local.Stack returned
// nil): cap(b) is exactly a class size. It recomputes the class, so that Put
// keeps less alive across its calls.
func (p *Pool) putFull(b []byte, local bool) {
	if p.maxSize == 0 { // the zero Pool, for a slice of capacity 0
		p.made().Put(b)
		return
	}
	cl := &p.classes[bits.Len(uint(cap(b)))-1-p.minShift]
	if local && cl.local.Push(unsafe.Pointer(unsafe.SliceData(b))) {
		return
	}
	p.putSlow(cl, b)
}

// putOther is Put for everything but the fast path: too small or too large
// capacities, foreign capacities (re-sliced to their class), ZeroOnPut and the
// debug table.
func (p *Pool) putOther(b []byte) {
	if p.maxSize == 0 {
		p.made().Put(b)
		return
	}
	c := cap(b)
	if c < p.minSize {
		if c > 0 {
			p.unfiled.Add(1)
		}
		return
	}
	k := bits.Len(uint(c)) - 1 - p.minShift
	if k >= len(p.classes) { // c >= 2×MaxSize
		p.unfiled.Add(1)
		release(p.alloc, b)
		return
	}
	cl := &p.classes[k]
	size := cl.size
	b = b[:0:size]
	debugOnPut(b) // may panic; nothing is pinned here
	if p.zeroOnPut {
		clear(b[:size])
	}
	if cl.local != nil && cl.local.Push(unsafe.Pointer(unsafe.SliceData(b))) {
		return
	}
	p.putSlow(cl, b)
}

func (p *Pool) putSlow(cl *class, b []byte) {
	if cl.ex.Park(b) {
		return
	}
	cl.drops.Add(1)
	debugForget(b)
	release(p.alloc, b)
}

// made returns the Pool a zero Pool forwards to, making it on first use.
func (p *Pool) made() *Pool {
	if q := p.zero.Load(); q != nil {
		return q
	}
	p.zeroOnce.Do(func() {
		q, err := New(Config{})
		if err != nil {
			panic("bytepool: bug: the zero Config was rejected: " + err.Error())
		}
		p.zero.Store(q)
	})
	return p.zero.Load()
}

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

// Trim releases the buffers the pool retains. Before it returns, it gives
// back to their allocator every buffer in the exchanges and in the per-P
// tiers the calling goroutine can reach: the stack of the P it runs on and
// every P's spill. The other Ps' stacks (at most Depth buffers per class and
// P), which only their owners touch, it retires: they are emptied at once
// and their buffers released by a runtime cleanup after the next GC cycle or
// two. Retained bytes in Stats are zero afterwards, apart from Puts that run
// concurrently, and from one case: while the stacks a previous Trim (or idle
// trimming) retired in a class still wait for their cycle, Trim leaves that
// class's other stacks in place, so that retired stacks never pile up.
//
// So the memory a pool holds stays within MaxRetained plus, per class, one
// retired set of stacks awaiting its GC cycle (Depth × P buffers of the
// class; in practice those of the Ps other than Trim's), whatever the
// allocator and GC setting: with GOGC=off that set is never released, and no
// further retiring happens in that class, but Trim still releases
// everything else. A GOMAXPROCS increase adds, until the next cycle, the
// per-P tiers of the old count (see Pool).
func (p *Pool) Trim() {
	if p.maxSize == 0 {
		if q := p.zero.Load(); q != nil {
			q.Trim()
		}
		return
	}
	p.trimMu.Lock()
	defer p.trimMu.Unlock()
	for i := range p.classes {
		p.drainLocal(i)
		p.drainExchange(i)
	}
}

// drainLocal releases what class i's per-P tiers hold (see Trim): what the
// calling goroutine can pop, at once; the other Ps' stacks by retiring them,
// unless a set retired earlier still awaits its cleanup. Called with trimMu
// held.
func (p *Pool) drainLocal(i int) {
	cl, st := &p.classes[i], &p.trim[i]
	l := cl.local
	if l == nil {
		return
	}
	// Each Pop counts a hit or a steal on the Local (Local.Stats): note how
	// many of each the drain made, so that Stats and the idle rules count
	// only Gets.
	before := l.Stats()
	var drained uint64
	for {
		ptr, ok := l.Pop()
		if !ok {
			break
		}
		drained++
		cl.released.Add(1)
		b := unsafe.Slice((*byte)(ptr), cl.size)
		debugForget(b)
		release(p.alloc, b)
	}
	if drained > 0 {
		// Concurrent Gets may have counted too; a drain's pop is a steal
		// only if the steals grew.
		after := l.Stats()
		steals := min(after.Steals-before.Steals, drained)
		cl.drainedSteals.Add(steals)
		cl.drainedHits.Add(drained - steals)
	}
	if l.Len() == 0 {
		return
	}
	// Another P's stack holds buffers. A set retired earlier is released
	// by the cleanup that the GC cycle after its Retire queues; two ticks
	// (two cycles) after it, that has happened.
	if now := p.ticks.Load(); st.retired && now < st.retiredTick+2 {
		return
	}
	l.Retire()
	st.retired, st.retiredTick = true, p.ticks.Load()
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
	alloc   Allocator
}

// releaseAll runs from a runtime cleanup once a Pool is unreachable: it gives
// back everything the pool retained. No goroutine can use the pool any more,
// but only the owner of a stack can pop it: the spills and the stack of the
// cleanup's P are drained here, the rest retired.
func releaseAll(a releaseArg) {
	for i := range a.classes {
		cl := &a.classes[i]
		if cl.local != nil {
			for {
				ptr, ok := cl.local.Pop()
				if !ok {
					break
				}
				b := unsafe.Slice((*byte)(ptr), cl.size)
				debugForget(b)
				release(a.alloc, b)
			}
			if cl.local.Len() > 0 {
				cl.local.Retire()
			}
		}
		drain(cl, a.alloc)
	}
}
