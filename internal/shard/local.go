package shard

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/poolkit/poolkit/internal/cacheline"
	"github.com/poolkit/poolkit/internal/nocopy"
)

// MaxDepth is [github.com/poolkit/poolkit/shard.MaxDepth].
const MaxDepth = 1 << 12

// Local implements [github.com/poolkit/poolkit/shard.Local]; see its documentation.
//
// Beyond the public operations, Pop and Push come as their steps, for a
// caller that wants them inlined into its own fast path (bytepool does):
// Enter, Local.Stack, Stack.Pop or Stack.Push, then PopSpill or PushSpill
// when the stack missed, then Exit; and Pop or Push after Exit when
// Local.Stack returned nil.
//
// A Push synchronizes before the Pop that returns its value: in the default
// build through the stack, because both run on the same P, which executes
// one goroutine at a time; through a spill, by its atomic operations.
//
// DrainAll seals a Local for good (see there): its owner's last word on it.
type Local[T any] struct {
	_ nocopy.NoCopy
	// procs and stacks describe the current table for Local.Stack and the
	// steals: its procs stacks start at stacks. Readers load procs first;
	// publish stores stacks first. Tables never shrink, so a reader that
	// pairs a new stacks with an old procs stays inside the new table; only
	// DrainAll sets procs to 0, which pairs with any stacks. (cur is the
	// same table as an object, which Retire's cleanup hangs on.)
	procs  uintptr        // atomic: the number of stacks
	stacks unsafe.Pointer // atomic: *Stack[T], the first
	cur    atomic.Pointer[localTable[T]]
	mu     sync.Mutex // serialises resize, Retire and DrainAll; never taken while pinned
	// sealed is set, under mu, by DrainAll: from then on no table is
	// published, and the slow paths keep and take nothing.
	sealed atomic.Bool
	depth  int
	spill  int // cells of each P's spill; 0 without a spill tier
	drop   func(T)
	// retiredHits and retiredSteals carry the counters of retired tables, so
	// that Stats does not lose them (it may miss them while a Retire runs: the
	// new table is published before the old one's counts are added here).
	retiredHits, retiredSteals atomic.Uint64
}

// localTable is one generation of a Local's stacks, one per P id. The stacks
// are values, not pointers, so the fast path chases one pointer fewer; the
// price is that a table cannot be grown in place: when GOMAXPROCS grows, a
// bigger table replaces it exactly as Retire does (sync.Pool does the same).
type localTable[T any] struct {
	shards []Stack[T]
}

// Stack is one P's stack (and spill) in a Local. Only the goroutine running
// on that P (while pinned), or the holder of g in the synchronised builds,
// touches n and slots. Local.Stack hands it out; its methods are for the
// section between Enter and Exit.
//
// The padding rounds the size up to a whole number of cacheline.Size, so
// that two Ps' stacks never share a line and indexing the table is a shift,
// not a multiplication.
//
// The spill starts on a line of its own: stealers read and write its head and
// tail, and must not take the owner's stack line away from it.
type Stack[T any] struct {
	g     guard
	n     word // number of values in slots[:n]
	hits  word // successful Pops from this P's stack or spill
	id    int  // index in its table
	slots []T
	_     [cacheline.Size - unsafe.Sizeof(localStackHead{})%cacheline.Size]byte
	sp    spill[T]
	_     [cacheline.Size - unsafe.Sizeof(spillHead{})%cacheline.Size]byte
}

// localStackHead and spillHead have the layout of Stack's stack fields
// and of a spill (the element type does not change a slice header's size);
// they size Stack's padding.
type localStackHead struct {
	_ guard
	_ word // n
	_ word // hits
	_ int  // id
	_ []struct{}
}

type spillHead struct {
	_ atomic.Uint64 // headTail
	_ []struct{}    // cells
	_ word          // steals
}

// NewLocal is [github.com/poolkit/poolkit/shard.NewLocal].
func NewLocal[T any](depth int, drop func(T)) *Local[T] {
	return NewLocalSpill(depth, 0, drop)
}

// NewLocalSpill is [github.com/poolkit/poolkit/shard.NewLocalSpill].
//
// Cost: a Push on a full stack is one atomic add for the whole move, a Pop
// on an empty stack one compare-and-swap for the whole refill (so, when the
// spill has a batch of room or of values, at most one of each per half a
// stack of operations, however a caller goes back and forth), a steal one
// compare-and-swap and one atomic store, on the spill's head/tail line (a
// line of its own, apart from the stack's) and the cells; all inside the
// same pinned section as the stack. A Pop that misses its own P reads each
// other P's head/tail line once. The stack in front keeps its cost: a Push
// or Pop that the stack serves never touches a spill.
func NewLocalSpill[T any](depth, spill int, drop func(T)) *Local[T] {
	l := new(Local[T])
	l.Init(depth, spill, drop)
	return l
}

// Init makes l, which must be a zero Local not yet used, what NewLocalSpill
// returns, for a type that holds a Local by value.
func (l *Local[T]) Init(depth, spill int, drop func(T)) {
	if depth < 1 || depth > MaxDepth {
		panic("shard: depth must be in [1, MaxDepth]")
	}
	if spill < 0 || spill > MaxDepth {
		panic("shard: spill must be in [0, MaxDepth]")
	}
	if spill > 0 {
		spill = 1 << bits.Len(uint(spill-1))
	}
	l.depth, l.spill, l.drop = depth, spill, drop
	l.publish(l.newTable(runtime.GOMAXPROCS(0)))
}

// publish makes t the current table; stacks goes before procs (see Local).
func (l *Local[T]) publish(t *localTable[T]) {
	l.cur.Store(t)
	atomic.StorePointer(&l.stacks, unsafe.Pointer(&t.shards[0]))
	atomic.StoreUintptr(&l.procs, uintptr(len(t.shards)))
}

func (l *Local[T]) newTable(n int) *localTable[T] {
	t := &localTable[T]{shards: make([]Stack[T], n)}
	if unsafe.Sizeof(t.shards[0]) != stackSize {
		panic("shard: Stack's size depends on its element type") // Local.Stack would misindex
	}
	slots := cacheline.Carve[T](n, l.depth)
	var cells [][]spillCell[T]
	if l.spill > 0 {
		cells = cacheline.Carve[spillCell[T]](n, l.spill)
	}
	for i := range t.shards {
		t.shards[i].id = i
		t.shards[i].slots = slots[i]
		if cells != nil {
			t.shards[i].sp.init(cells[i])
		}
	}
	return t
}

// Depth is [github.com/poolkit/poolkit/shard.Local.Depth].
func (l *Local[T]) Depth() int { return l.depth }

// Procs is [github.com/poolkit/poolkit/shard.Local.Procs]: the stacks (and spills) of the current
// table.
func (l *Local[T]) Procs() int { return len(l.cur.Load().shards) }

// Spill is [github.com/poolkit/poolkit/shard.Local.Spill].
func (l *Local[T]) Spill() int { return l.spill }

// Stack returns the stack of P pid, for a caller between Enter and Exit
// with the id Enter returned, for Stack.Pop and Stack.Push, then PopSpill and
// PushSpill. It returns nil where there is no stack to use that way: in the
// synchronised builds (race, poolkit_nolinkname), where Enter returns -1,
// for a P beyond the table (GOMAXPROCS grew) until a Pop, a Push or Grow has
// grown it, and once DrainAll has sealed l. After a miss on a nil stack, Pop
// and Push do the whole work.
//
// Enter, Stack, the Stack methods and Exit are small enough for the compiler
// to inline, so that a caller's fast path makes no call of its own but the
// runtime's pin and unpin; Pop and Push are the same steps behind one call.
//
// The stack belongs to the table that was current when Stack ran, and
// pinning keeps Retire's cleanup of that table from running before Exit (see
// Retire). Misuse is not caught: a stack used unpinned, on another P, or
// after Exit, is touched by two goroutines at once, and values on it may be
// dropped while in use.
func (l *Local[T]) Stack(pid int) *Stack[T] {
	// procs first, then stacks (see Local).
	if uint(pid) >= uint(atomic.LoadUintptr(&l.procs)) {
		return nil
	}
	return (*Stack[T])(unsafe.Add(atomic.LoadPointer(&l.stacks), uintptr(pid)*stackSize))
}

// stackSize is the size of a Stack[T], the same for every T: the fields that
// hold T are slice headers.
const stackSize = unsafe.Sizeof(Stack[struct{}]{})

// PushSpill is Push's second step, between Enter and Exit, after s.Push
// returned false: it moves the oldest half of the full stack to s's spill
// and puts v on the stack (see NewLocalSpill). It returns false, keeping
// nothing, if the spill has no room (or its next cell is still being
// emptied by a stealer), if the Local has no spill tier, or if s is nil
// (then, after Exit, Push does the whole work).
func (l *Local[T]) PushSpill(s *Stack[T], v T) bool {
	return s != nil && l.spill > 0 && s.pushSpill(v)
}

// PopSpill is Pop's second step, between Enter and Exit, after s.Pop
// returned false: it refills the empty stack from the newest values of s's
// spill and pops it, else steals the oldest value of another P's spill (see
// NewLocalSpill). It returns false if all are empty, if the Local has no
// spill tier, or if s is nil (then, after Exit, Pop does the whole work).
func (l *Local[T]) PopSpill(s *Stack[T]) (v T, ok bool) {
	if s != nil {
		v, ok = l.popSpill(s)
	}
	return v, ok
}

// Push is [github.com/poolkit/poolkit/shard.Local.Push]: the steps Enter, Local.Stack, Stack.Push,
// PushSpill and Exit, or pushSlow where Enter gives no stack.
func (l *Local[T]) Push(v T) bool {
	s := l.Stack(Enter())
	if s == nil {
		Exit()
		return l.pushSlow(v)
	}
	ok := s.Push(v) || l.PushSpill(s, v)
	Exit()
	return ok
}

// pushSlow is Push where Enter has no stack: in the synchronised builds,
// for a P id beyond the table (GOMAXPROCS grew), which it grows, and on a
// sealed Local (see DrainAll), where it keeps nothing.
func (l *Local[T]) pushSlow(v T) bool {
	t, pid, ok := l.enterSlow()
	if !ok {
		return false
	}
	s := &t.shards[pid]
	ok = s.Push(v) || l.PushSpill(s, v)
	end()
	runtime.KeepAlive(t) // the table stays reachable until the stack is left: see Retire
	return ok
}

// Pop is [github.com/poolkit/poolkit/shard.Local.Pop]: the steps Enter, Local.Stack, Stack.Pop,
// PopSpill and Exit, or popSlow where Enter gives no stack.
func (l *Local[T]) Pop() (v T, ok bool) {
	s := l.Stack(Enter())
	if s == nil {
		Exit()
		return l.popSlow()
	}
	if v, ok = s.Pop(); !ok {
		v, ok = l.PopSpill(s)
	}
	Exit()
	return v, ok
}

// popSlow is Pop where Enter has no stack: for a P id beyond the table
// (GOMAXPROCS grew), which it grows, in the synchronised builds, and on a
// sealed Local (see DrainAll), where it finds nothing; in the build without
// P ids, where a goroutine has no stack of its own, it looks at the others
// when its draw is empty.
func (l *Local[T]) popSlow() (v T, ok bool) {
	t, pid, ok := l.enterSlow()
	if !ok {
		return v, false
	}
	v, ok = t.shards[pid].Pop()
	if !ok && randomIDs {
		for i := 1; i < len(t.shards) && !ok; i++ {
			v, ok = t.shards[(pid+i)%len(t.shards)].Pop()
		}
	}
	if !ok {
		v, ok = l.popSpill(&t.shards[pid])
	}
	end()
	runtime.KeepAlive(t)
	return v, ok
}

// enterSlow begins the slow paths' operation (begin) and returns the table
// and the caller's stack in it; the caller ends it (end). For a stack id
// beyond the table (GOMAXPROCS grew) it ends the operation, replaces the
// table with a big enough one, unpinned, and begins again. On a sealed Local
// it ends the operation and returns false. (Sealing guards the drain only in
// the synchronised builds, where DrainAll takes the stacks' guards for good;
// in the default build the drain's caller has stopped the world, and
// sealed, read here pinned, only makes a Pop or Push that comes after the
// drain find nothing, see DrainAll.)
func (l *Local[T]) enterSlow() (t *localTable[T], pid int, ok bool) {
	t = l.cur.Load()
	pid = begin(len(t.shards))
	for uint(pid) >= uint(len(t.shards)) {
		end()
		if !l.replace(pid + 1) {
			return nil, 0, false // sealed
		}
		t = l.cur.Load()
		pid = begin(len(t.shards))
	}
	if l.sealed.Load() {
		end()
		return nil, 0, false
	}
	return t, pid, true
}

// Grow makes l's table cover P id pid, as a Pop or Push from that P would
// (see Local.Stack), for a caller whose pinned section found no stack there
// and that will start again pinned. It runs unpinned, and reports false,
// growing nothing, if l is sealed (see DrainAll). (Enter's -1 needs no
// growth.)
func (l *Local[T]) Grow(pid int) bool {
	if l.sealed.Load() {
		return false
	}
	return pid < len(l.cur.Load().shards) || l.replace(pid+1)
}

// Push puts v on s, between Enter and Exit. It returns false, keeping
// nothing, if s is full or nil; the caller goes on to PushSpill.
//
// Push and Pop are the stack alone, kept small so that the compiler inlines
// them into their callers; the spill is reached through PushSpill and
// PopSpill, and their work in pushSpill and popSpill, which are not inlined,
// only when the stack is full or empty.
func (s *Stack[T]) Push(v T) bool {
	if s == nil || !s.g.lock() {
		return false
	}
	n := s.n.load()
	if uint(n) >= uint(len(s.slots)) {
		s.g.unlock()
		return false
	}
	s.slots[n] = v
	s.n.store(n + 1)
	s.g.unlock()
	return true
}

// Pop takes the value most recently pushed on s, between Enter and Exit, and
// zeroes its slot. It returns false if s is empty or nil; the caller goes on
// to PopSpill.
func (s *Stack[T]) Pop() (v T, ok bool) {
	if s == nil || !s.g.lock() {
		return v, false
	}
	// One unsigned compare covers n > 0 and n <= len(slots).
	n := s.n.load() - 1
	if uint(n) >= uint(len(s.slots)) {
		s.g.unlock()
		return v, false
	}
	v = s.slots[n]
	var zero T
	s.slots[n] = zero
	s.n.store(n)
	s.hits.add(1)
	s.g.unlock()
	return v, true
}

// pushSpill is Push on a full stack, as its owner: it moves the oldest half
// of the stack (batch values, as many as the spill has room for) to the
// spill, oldest first, and puts v on the stack. It fails, keeping nothing,
// if it could move nothing: the spill is full, or its next cell is still
// being emptied by a stealer (see spill). So every value in the spill is older than every
// value on the stack, and Pop, which takes the stack's newest and then
// refills the stack from the spill's newest, returns values newest first
// across both tiers: a burst of Gets reuses first the buffers a burst of
// Puts returned last, the ones most likely still in cache.
//
// Moving half the stack, not all of it, leaves room both ways: a caller that
// goes back and forth around a full (or empty) stack moves a batch only
// every batch operations, never on each one.
//
//go:noinline
func (s *Stack[T]) pushSpill(v T) (ok bool) {
	if !s.g.lock() {
		return false
	}
	n := s.n.load()
	if n == len(s.slots) {
		if k := s.sp.pushN(s.slots[:s.batch()]); k > 0 {
			copy(s.slots, s.slots[k:n])
			clear(s.slots[n-k : n]) // retain nothing (DESIGN invariant 8)
			n -= k
		}
	}
	if n < len(s.slots) {
		s.slots[n] = v
		s.n.store(n + 1)
		ok = true
	}
	s.g.unlock()
	return ok
}

// batch is how many values pushSpill moves to the spill and popSpill takes
// back: half the stack's depth, rounded up.
func (s *Stack[T]) batch() int { return (len(s.slots) + 1) / 2 }

// popSpill is Pop on an empty stack, for its owner (pinned, in the default
// build): it refills the stack with the spill's newest values, up to batch
// of them, in one claim, and pops the newest; if the spill is empty too, it
// takes the oldest value of another P's spill, visiting each once, starting
// after s's index. Steals are counted on s.
//
// The steals visit the current table, read from procs and stacks, which may
// be newer than s's own if a Retire ran since s was reached: that is as good
// a place to find values. A steal from a retired table is safe too (its
// cleanup takes values with the same compare-and-swap), but popSpill holds
// no table, so in the synchronised builds, where nothing is pinned, it may
// take a value from a retired table's spill before its cleanup does.
//
//go:noinline
func (l *Local[T]) popSpill(s *Stack[T]) (v T, ok bool) {
	if l.spill == 0 {
		return v, false
	}
	if s.g.lock() {
		// The stack is empty (in the synchronised builds, unless another
		// goroutine filled it since the caller's Pop). The refill keeps the
		// spill's order, so Pop stays newest first (see pushSpill).
		if s.n.load() == 0 {
			s.n.store(s.sp.popN(s.slots[:s.batch()]))
		}
		s.g.unlock()
		if v, ok = s.Pop(); ok {
			return v, true
		}
	}
	// procs first, as Stack reads them.
	n := int(atomic.LoadUintptr(&l.procs))
	shards := unsafe.Slice((*Stack[T])(atomic.LoadPointer(&l.stacks)), n)
	for k := 1; k < n; k++ {
		if v, ok = shards[(s.id+k)%n].sp.steal(); ok {
			s.sp.steals.add(1)
			return v, true
		}
	}
	return v, false
}

// Stats is [github.com/poolkit/poolkit/shard.Stats], which converts from it.
type Stats struct {
	Hits, Steals uint64
}

// Len is [github.com/poolkit/poolkit/shard.Local.Len]. Each count is read without stopping its owner
// (see word).
func (l *Local[T]) Len() int {
	t := l.cur.Load()
	n := 0
	for i := range t.shards {
		n += t.shards[i].n.load() + t.shards[i].sp.len()
	}
	return n
}

// Stats is [github.com/poolkit/poolkit/shard.Local.Stats]. Each P's counters are read without
// stopping it (see word); counts a straggler makes on a table after Retire
// has summed it are lost.
func (l *Local[T]) Stats() Stats {
	st := Stats{Hits: l.retiredHits.Load(), Steals: l.retiredSteals.Load()}
	t := l.cur.Load()
	for i := range t.shards {
		st.Hits += uint64(t.shards[i].hits.load())
		st.Steals += uint64(t.shards[i].sp.steals.load())
	}
	return st
}

// Retire is [github.com/poolkit/poolkit/shard.Local.Retire]: it publishes a table of fresh, empty
// stacks, and hands the old table to a runtime cleanup that gives its values
// to the drop function once the table is unreachable.
//
// Why that cleanup cannot race an owner: the cleanup runs only once a garbage
// collection cycle has found the old table unreachable, and every operation
// that reached the old table keeps that from happening until it has ended.
//
// In the default build the operation pins before it reads the table (Enter,
// then Local.Stack) and unpins at its end (Exit). Two properties of the Go
// runtime make that enough, the same that sync.Pool's cleanup at the start of
// each cycle relies on, though neither is a documented guarantee: a cycle
// already marking when Retire replaces the table marks the old one anyway
// (the write barrier shades the pointer it overwrites), and a cycle that
// starts later must first stop the world, which waits for every pinned
// goroutine to unpin. So the old table is found unreachable only by a cycle
// that started after every such operation had ended.
//
// The slow paths (pushSlow, popSlow), which every operation takes in the
// synchronised builds, hold the table itself until they have ended
// (runtime.KeepAlive after end), and there the cleanup takes each stack's
// guard as well. (A steal in popSpill reads the current table without holding
// it; taking a value from a retired spill is safe, see popSpill.) So a value
// a straggler pushed after Retire is found by the cleanup.
func (l *Local[T]) Retire() { l.replace(0) }

// replace publishes a table of fresh stacks, at least n of them and no fewer
// than before, and retires the old one (see Retire). It reports false,
// replacing nothing, if l is sealed (see DrainAll). It runs unpinned.
func (l *Local[T]) replace(n int) bool {
	l.mu.Lock()
	old := l.cur.Load()
	if l.sealed.Load() {
		l.mu.Unlock()
		return false
	}
	if n > 0 && n <= len(old.shards) {
		l.mu.Unlock() // another goroutine grew it first
		return true
	}
	l.publish(l.newTable(max(n, len(old.shards), runtime.GOMAXPROCS(0))))
	l.mu.Unlock()

	var hits, steals uint64
	for i := range old.shards {
		hits += uint64(old.shards[i].hits.load())
		steals += uint64(old.shards[i].sp.steals.load())
	}
	l.retiredHits.Add(hits)
	l.retiredSteals.Add(steals)
	if l.drop != nil {
		runtime.AddCleanup(old, drainRetired[T], retired[T]{old.shards, l.drop})
	}
	return true
}

// DrainAll hands every value l holds, in every P's stack and spill, to
// drop, at once, and leaves l empty and sealed: from then on its table is
// never replaced, Local.Stack returns nil, Push keeps nothing and reports
// false, Pop finds nothing, and Grow reports false. The counters are left as
// they are (Stats still counts what the Local served). It runs unpinned.
//
// It is for a Local that its owner has stopped publishing, so that the only
// operations still to come on it are those of stragglers that loaded it
// before. What makes the drain safe from them depends on the build:
//
//   - In the default build the owner must first wait for every pinned
//     section that could have loaded l to end: a stop-the-world after the
//     switch (one waits for every pinned goroutine to unpin), as Retire's
//     cleanup waits for a GC cycle. A straggler must then not go on with l
//     outside the pinned section that loaded it: a Pop or Push that pins
//     again after the stop-the-world would run alongside the drain.
//   - In the synchronised builds nothing is pinned, and the stop-the-world
//     waits for nobody; the guards make the drain safe whenever a straggler
//     comes. DrainAll takes each stack's guard for good (guard.seal),
//     waiting for a straggler that holds it, so a straggler's Push on that
//     stack is either over before the drain, which finds its value, or
//     fails, keeping nothing: no value is left in a drained Local.
func (l *Local[T]) DrainAll(drop func(T)) {
	l.mu.Lock()
	l.sealed.Store(true)
	atomic.StoreUintptr(&l.procs, 0)
	t := l.cur.Load()
	l.mu.Unlock()
	drainRetired(retired[T]{t.shards, drop})
}

type retired[T any] struct {
	shards []Stack[T]
	drop   func(T)
}

// drainRetired hands every value of r's stacks and spills to r.drop,
// sealing each stack's guard first (a stack sealed already was drained
// already, and nothing can have been put on it since).
func drainRetired[T any](r retired[T]) {
	for i := range r.shards {
		s := &r.shards[i]
		if !s.g.seal() {
			continue
		}
		for j := range s.n.load() {
			v := s.slots[j]
			var zero T
			s.slots[j] = zero
			r.drop(v)
		}
		s.n.store(0)
		for {
			v, ok := s.sp.steal()
			if !ok {
				break
			}
			r.drop(v)
		}
	}
}
