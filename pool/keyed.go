package pool

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolkit/poolkit/internal/cacheline"
	"github.com/poolkit/poolkit/internal/configerr"
	"github.com/poolkit/poolkit/manager"
)

// KeyedConfig configures a [Keyed] pool: the budget of all keys together,
// and the Config each key's pool gets.
type KeyedConfig struct {
	// MaxSize bounds the objects of all keys together — idle, leased,
	// connecting and being closed — exactly, as Config.MaxSize bounds a
	// pool's. Required (>= 1).
	MaxSize int
	// MaxSizePerKey bounds one key's objects, counted the same way; 0
	// means MaxSize.
	MaxSizePerKey int
	// PerKey is the Config of each key's pool, its fields meaning what they
	// mean for a Pool, for that key's objects: MinIdle is kept idle for each
	// key that has state (see Keyed), within MaxSizePerKey and only while
	// no key that holds nothing waits for room; MaxIdle bounds each key's
	// idle objects; MaxConnecting each key's connects. Name and Observer
	// are the keyed pool's. Its MaxSize must be 0: MaxSizePerKey sets it.
	PerKey Config
}

// keyConfig returns the Config of each key's pool, normalized: PerKey, with
// MaxSizePerKey as its MaxSize.
func (c KeyedConfig) keyConfig() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, configerr.New(ErrInvalidConfig, "pool: KeyedConfig."+format, args...)
	}
	switch {
	case c.MaxSize < 1:
		return bad("MaxSize must be >= 1, got %d", c.MaxSize)
	case c.MaxSizePerKey < 0 || c.MaxSizePerKey > c.MaxSize:
		return bad("MaxSizePerKey must be in [0, MaxSize=%d], got %d", c.MaxSize, c.MaxSizePerKey)
	case c.PerKey.MaxSize != 0:
		return bad("PerKey.MaxSize must be 0 (MaxSizePerKey bounds each key), got %d", c.PerKey.MaxSize)
	}
	kc := c.PerKey
	kc.MaxSize = c.MaxSizePerKey
	if kc.MaxSize == 0 {
		kc.MaxSize = c.MaxSize
	}
	return kc.normalizeAs(keyedNames)
}

// keyedNames name, in the errors of a key's Config, PerKey's fields, and
// MaxSizePerKey as its MaxSize.
var keyedNames = fieldNames{"pool: KeyedConfig.PerKey.", "MaxSizePerKey", "MinIdle", "MaxIdle"}

// keyedSkipsRecycle is skipsRecycle for a keyed manager: a
// manager.KeyedFuncs without RecycleFunc, or one whose SkipRecycle says so.
func keyedSkipsRecycle[K comparable, T any](m manager.Keyed[K, T]) bool {
	switch m := m.(type) {
	case manager.KeyedFuncs[K, T]:
		return m.RecycleFunc == nil
	case *manager.KeyedFuncs[K, T]:
		return m.RecycleFunc == nil
	case recycleSkipper:
		return m.SkipRecycle()
	}
	return false
}

// Keyed is a pool of objects made for keys — a tenant's database, a cluster
// node, an upstream host — under one budget: [KeyedConfig.MaxSize] bounds
// the objects of all keys together, exactly, and MaxSizePerKey each key's.
// Each key's objects are a [Pool]'s, with its lease, checks, lifetimes,
// Observer and Stats; the pools share the budget.
//
// Room moves between keys only when it pays, a connect costing what many
// uses of an object cost. A key that holds objects is served by its own
// releases, and grows into room nobody uses: free room, or an object of a
// key nobody waits for that has sat idle long enough to be surplus. A key
// that holds nothing gets room at once: by closing the least recently used
// idle object of a key nobody waits for ([CloseEvict]), else from the first
// release that can spare one. A key whose waiters outnumber its objects for
// about one connect takes an idle object of a key nobody waits for
// ([CloseEvictHot]). The bounds follow the connect times the pool measures;
// docs/DESIGN.md ("Keyed pools") states the rule and its bounds on waiting.
//
// A key's state (its pool) is made by its first Acquire and dropped once
// its last object has closed and nobody waits for it: memory follows the
// live objects and waiters, not the number of keys ever seen. A key must
// equal itself (a float NaN does not: such a key panics).
//
// All methods are safe for concurrent use. A Keyed runs one maintainer
// goroutine for all its keys (and, while health checks run, one more);
// Close stops them.
type Keyed[K comparable, T any] struct {
	mgr   manager.Keyed[K, T]
	skips bool // Recycle need not be called (see keyedSkipsRecycle)
	cfg   KeyedConfig
	kcfg  Config     // each key's pool's, which they share
	sh    *shared[T] // what the keys' pools share
	start time.Time  // every key's clock's origin, so that idle times compare
	tick  time.Duration
	b     budget[K, T]

	// table maps each key with state to its pool (K to *keyMember[K, T]):
	// read without a lock on every Acquire whose P's last key differs.
	table  sync.Map
	closed atomic.Bool
	// hot is each P's last key and its pool, read and written only by
	// that P while pinned (as sync.Pool's private slot): hashing the key
	// for the table costs more than the rest of an Acquire's hot path. A
	// P beyond the slice (GOMAXPROCS grew), or a synchronised build, goes
	// to the table. A stale entry (its key's state dropped) ends in
	// ErrClosed from the pool it names, and the Acquire asks the table.
	hot []hotKey[K, T]

	ctx    context.Context // ended by Close: every key's connects, the maintainer
	cancel context.CancelCauseFunc
	clock  atomic.Pointer[tick] // the keys' clock, published by the maintainer
	kick   chan struct{}        // wakes the maintainer: a poke, or room to look for (1-buffered)
	pokes  atomic.Int64         // keys poked since the maintainer last looked

	mu      sync.Mutex // guards members, past and the keys' additions and drops
	members []*keyMember[K, T]
	past    Stats // the counts of the keys dropped so far

	// running counts the goroutines of the keyed pool and of its keys'
	// pools, those of dropped keys included; Close waits for it to be 0.
	running  atomic.Int64
	idle     chan struct{} // closed once closed and running is 0
	idleOnce sync.Once
}

// NewKeyed returns a keyed pool of objects made by m. It returns an error
// matching [ErrInvalidConfig], naming the field, if cfg is invalid. It
// starts one maintainer goroutine; Close stops it.
func NewKeyed[K comparable, T any](m manager.Keyed[K, T], cfg KeyedConfig) (*Keyed[K, T], error) {
	if m == nil {
		return nil, configerr.New(ErrInvalidConfig, "pool: NewKeyed: nil Keyed manager")
	}
	kcfg, err := cfg.keyConfig()
	if err != nil {
		return nil, err
	}
	kcfg = kcfg.named()
	tick := tickFor(kcfg)
	if testKeyedTick != 0 {
		tick = testKeyedTick
	}
	k := &Keyed[K, T]{mgr: m, skips: keyedSkipsRecycle(m), cfg: cfg, kcfg: kcfg, sh: newShared[T](), start: time.Now(), tick: tick,
		hot: make([]hotKey[K, T], runtime.GOMAXPROCS(0)), kick: make(chan struct{}, 1), idle: make(chan struct{})}
	k.b.max, k.b.start = int64(cfg.MaxSize), k.start
	k.ctx, k.cancel = context.WithCancelCause(context.Background())
	k.publishClock()
	k.goroutine(1)
	go k.maintain()
	return k, nil
}

// testKeyedTick, if set, is the tick of the keyed pools made from then on
// (tests only: a finer clock than the configuration gives, so that idle
// times of milliseconds can be told apart).
var testKeyedTick time.Duration

// A keyMember is also the Manager of its key's pool: Connect for its key;
// Recycle and Close are the keyed manager's.

func (m *keyMember[K, T]) Connect(ctx context.Context) (T, error) { return m.k.mgr.Connect(ctx, m.key) }

func (m *keyMember[K, T]) Recycle(ctx context.Context, obj T, met manager.Metrics) error {
	return m.k.mgr.Recycle(ctx, obj, met)
}

func (m *keyMember[K, T]) Close(obj T) error { return m.k.mgr.Close(obj) }

// hotKey is one P's entry of Keyed.hot, on cache lines of its own.
type hotKey[K comparable, T any] struct {
	_   cacheline.Pad
	key K
	p   *Pool[T]
	_   cacheline.Pad
}

// member returns key's pool if it was this P's last key and is open (a
// dropped key's pool is closed), else nil: the caller asks lookup.
func (k *Keyed[K, T]) member(key K) *Pool[T] {
	var p *Pool[T]
	if pid := procPin(); uint(pid) < uint(len(k.hot)) {
		if h := &k.hot[pid]; h.p != nil && h.key == key && h.p.state.Load()&closedBit == 0 {
			p = h.p
		}
	}
	procUnpin()
	return p
}

// lookup returns key's pool from the table, made if the key has no state,
// and makes it this P's last one; nil once the keyed pool is closed.
func (k *Keyed[K, T]) lookup(key K) *Pool[T] {
	var p *Pool[T]
	if v, ok := k.table.Load(key); ok {
		p = v.(*keyMember[K, T]).p
	} else if p = k.add(key); p == nil {
		return nil
	}
	if pid := procPin(); uint(pid) < uint(len(k.hot)) {
		h := &k.hot[pid]
		h.key, h.p = key, p
	}
	procUnpin()
	return p
}

// add makes key's pool, unless another goroutine just did: O(1), whatever
// the number of keys.
func (k *Keyed[K, T]) add(key K) *Pool[T] {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed.Load() {
		return nil
	}
	if v, ok := k.table.Load(key); ok {
		return v.(*keyMember[K, T]).p
	}
	if key != key {
		panic("pool: Keyed: a key that is not equal to itself (a NaN) cannot be looked up again")
	}
	m := &keyMember[K, T]{k: k, key: key, idx: len(k.members)}
	m.p = build(manager.Manager[T](m), &k.kcfg, any(k.mgr), k.skips, k.start, room[T](m), k.ctx, k.cancel, k.sh)
	m.p.clock.Store(k.clock.Load())
	k.members = append(k.members, m)
	k.table.Store(key, m)
	return m.p
}

// drop drops m's state if it is empty (no object, no waiter, no call
// running): its pool is closed (any goroutine still holding it gets
// ErrClosed from it and asks again: see Acquire), it leaves the table, and
// its counts go to the past. O(1), whatever the number of keys.
func (k *Keyed[K, T]) drop(m *keyMember[K, T]) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed.Load() || m.idx < 0 {
		return
	}
	p := m.p
	// Under p's mu (no waiter queues meanwhile), smu (no reserve raises
	// live meanwhile; a reserve that raised it before sees the closed bit
	// and gives the slot back, as with Close) and the budget's mu.
	p.mu.Lock()
	p.smu.Lock()
	k.b.mu.Lock() // no room comes to it meanwhile (see tryRoom)
	empty := m.empty() && m.coming == 0
	if empty {
		p.state.Or(closedBit)
	}
	k.b.mu.Unlock()
	p.smu.Unlock()
	p.mu.Unlock()
	if !empty {
		return
	}
	p.dropHints()
	// Its counts only: a reserve that raced the drop may still hold a slot
	// it is about to give back (it saw the closed bit), and the gauges of
	// a dropped key are 0.
	s := p.Stats()
	s.Live, s.Idle, s.Leased, s.Connecting, s.Closing, s.Waiting = 0, 0, 0, 0, 0, 0
	k.past.add(s)
	k.table.Delete(m.key)
	last := k.members[len(k.members)-1]
	k.members[m.idx], last.idx = last, m.idx
	k.members[len(k.members)-1] = nil
	k.members = k.members[:len(k.members)-1]
	m.idx = -1
}

// Acquire returns a lease on an object for key, as [Pool.Acquire] does for
// a pool of key's objects: an idle one of key's, else a new one if key is
// under MaxSizePerKey and the keyed pool has room (see Keyed for how room
// moves between keys), else one released or connected for it while it
// waits. The lease is a [Lease] like any other. After Close, Acquire returns
// [ErrClosed]. A nil ctx panics.
func (k *Keyed[K, T]) Acquire(ctx context.Context, key K) (Lease[T], error) {
	// The hot path (DESIGN.md, "Keyed pools"): one pinned section finds
	// this P's last key and pops a hint from its pool's stack for this P;
	// acquireHinted is Pool.Acquire's fast path from there. ctx is looked
	// at first, as there.
	if ctx != nil && ctx.Err() == nil {
		var p *Pool[T]
		var e *entry[T]
		if pid := procPin(); uint(pid) < uint(len(k.hot)) {
			if h := &k.hot[pid]; h.p != nil && h.key == key {
				if s := h.p.state.Load(); s&closedBit == 0 {
					p = h.p
					if s&(acqHookBit|waiterMask) == 0 {
						e, _ = p.local.Load().Stack(pid).Pop()
					}
				}
			}
		}
		procUnpin()
		if e != nil {
			if l, done, err := p.acquireHinted(ctx, e); done {
				return l, err
			}
		}
		if p != nil {
			l, err := p.Acquire(ctx)
			if err == nil {
				return l, nil
			}
			return k.acquireAgain(ctx, key, p, err)
		}
	}
	return k.acquireAgain(ctx, key, nil, nil)
}

// acquireAgain is Acquire past its hot path: the key's pool from the table
// (made if need be) when p, the pool of this P's last key, is nil or
// returned ErrClosed (the key's state was dropped as the Acquire reached
// it), else err, p's error, after dropping the key's state if the failed
// Acquire left it empty.
//
//go:noinline
func (k *Keyed[K, T]) acquireAgain(ctx context.Context, key K, p *Pool[T], err error) (Lease[T], error) {
	if ctx == nil { // before the key's state is made
		panic("pool: Acquire: nil Context")
	}
	for p == nil || (err == ErrClosed && !k.closed.Load()) {
		if p = k.lookup(key); p == nil {
			return Lease[T]{}, ErrClosed
		}
		var l Lease[T]
		if l, err = p.Acquire(ctx); err == nil {
			return l, nil
		}
	}
	dropIfEmpty(p)
	return Lease[T]{}, err
}

// dropIfEmpty drops the state of p's key if a failed call left it empty.
//
//go:noinline
func dropIfEmpty[T any](p *Pool[T]) {
	if m, ok := p.rm.(interface{ dropIfEmpty() }); ok {
		m.dropIfEmpty()
	}
}

// TryAcquire is [Pool.TryAcquire] for key: an idle object of key's if there
// is one and nobody waits for one, else [ErrExhausted] at once, after
// starting a connect if key and the keyed pool have room — or, when key
// holds nothing and the keyed pool is at its cap, after closing the least
// recently used idle object of a key nobody waits for (if no such close is
// under way for key), so that a retry soon finds room.
func (k *Keyed[K, T]) TryAcquire(ctx context.Context, key K) (Lease[T], error) {
	p := k.member(key)
	if p == nil {
		if ctx == nil { // before the key's state is made
			panic("pool: TryAcquire: nil Context")
		}
		p = k.lookup(key)
	}
	for ; ; p = k.lookup(key) {
		if p == nil {
			return Lease[T]{}, ErrClosed
		}
		l, err := p.TryAcquire(ctx)
		if err == nil {
			return l, nil
		}
		if err != ErrClosed || k.closed.Load() {
			dropIfEmpty(p)
			return l, err
		}
	}
}

// Warm makes each key's pool hold what [Pool.Warm] makes it hold —
// max(PerKey.MinIdle, 1) connected objects — within the budget, key after
// key; at the cap, a key that holds nothing has the least recently used
// idle object of a key nobody waits for closed for its room. It returns the
// errors of the keys that failed, joined, each naming its pool's error.
func (k *Keyed[K, T]) Warm(ctx context.Context, keys ...K) error {
	if ctx == nil {
		panic("pool: Warm: nil Context")
	}
	var errs []error
	for _, key := range keys {
		if err := k.warm(ctx, key); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (k *Keyed[K, T]) warm(ctx context.Context, key K) error {
	for p := k.lookup(key); ; p = k.lookup(key) {
		if p == nil {
			return ErrClosed
		}
		m := p.rm.(*keyMember[K, T])
		m.calls.Add(1)
		err := p.Warm(ctx)
		m.calls.Add(-1)
		if err != ErrClosed || k.closed.Load() {
			if err != nil {
				m.dropIfEmpty()
			}
			return err
		}
	}
}

// Reset makes every object of every key created before it be closed, as
// [Pool.Reset] does.
func (k *Keyed[K, T]) Reset() {
	k.eachMember(func(m *keyMember[K, T]) { m.p.Reset() })
}

// ResetKey is Reset for key's objects only.
func (k *Keyed[K, T]) ResetKey(key K) {
	if v, ok := k.table.Load(key); ok {
		v.(*keyMember[K, T]).p.Reset()
	}
}

// Stats returns the keyed pool's figures: every key's summed, with the
// counts of keys whose state has been dropped, and MaxSize the global one.
func (k *Keyed[K, T]) Stats() Stats {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.past
	for _, m := range k.members {
		s.add(m.p.Stats())
	}
	s.MaxSize = k.cfg.MaxSize
	return s
}

// KeyStats returns key's figures, as its pool's [Pool.Stats]; false if the
// key has no state now. A key's counters count from the moment its state
// was last made: once it is dropped (no object, nobody waiting), its counts
// are in Stats only, and a key that comes back starts from zero.
func (k *Keyed[K, T]) KeyStats(key K) (Stats, bool) {
	v, ok := k.table.Load(key)
	if !ok {
		return Stats{}, false
	}
	return v.(*keyMember[K, T]).p.Stats(), true
}

// RangeKeys calls f with each key that has state now and its figures, in
// no set order, until f returns false.
func (k *Keyed[K, T]) RangeKeys(f func(key K, s Stats) bool) {
	for _, m := range k.snapshot() {
		if !f(m.key, m.p.Stats()) {
			return
		}
	}
}

// Len returns the number of keys that have state now.
func (k *Keyed[K, T]) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.members)
}

// Name returns KeyedConfig.Name.
func (k *Keyed[K, T]) Name() string {
	if k == nil {
		return ""
	}
	return k.cfg.PerKey.Name
}

// Close closes every key's pool, as [Pool.Close] does, at once: waiters get
// [ErrClosed], idle objects are closed, leased ones as they are released.
// It returns nil once every key's pool is done and every goroutine the
// keyed pool started has exited (those of dropped keys included), or, when
// ctx ends first, the errors of the pools not done, joined.
func (k *Keyed[K, T]) Close(ctx context.Context) error {
	k.mu.Lock()
	k.closed.Store(true)
	members := append([]*keyMember[K, T](nil), k.members...)
	k.mu.Unlock()
	k.cancel(ErrClosed)
	for _, m := range members {
		m.p.shut()
	}
	var errs []error
	for _, m := range members {
		if err := m.p.waitDone(ctx); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	if k.running.Load() == 0 {
		k.idleOnce.Do(func() { close(k.idle) })
	}
	select {
	case <-k.idle:
	case <-ctx.Done():
		if len(errs) == 0 {
			errs = append(errs, fmt.Errorf("pool: Close: %w (still waiting for %d goroutines of dropped keys and the maintainer)", ctx.Err(), k.running.Load()))
		}
	}
	return errors.Join(errs...)
}

// goroutine counts a goroutine of the keyed pool or of a key's pool that
// starts (+1) or exits (-1); the last to exit after Close lets it return.
func (k *Keyed[K, T]) goroutine(delta int) {
	if k.running.Add(int64(delta)) == 0 && k.closed.Load() {
		k.idleOnce.Do(func() { close(k.idle) })
	}
}

// kickMaintainer wakes the maintainer.
func (k *Keyed[K, T]) kickMaintainer() {
	select {
	case k.kick <- struct{}{}:
	default:
	}
}

// eachMember calls f on every key's pool, a chunk of them at a time taken
// under the lock (keys dropped or added meanwhile may be missed or seen
// twice).
func (k *Keyed[K, T]) eachMember(f func(*keyMember[K, T])) {
	var chunk [256]*keyMember[K, T]
	for i := 0; ; i += len(chunk) {
		k.mu.Lock()
		n := 0
		if i < len(k.members) {
			n = copy(chunk[:], k.members[i:])
		}
		k.mu.Unlock()
		for _, m := range chunk[:n] {
			f(m)
		}
		if n < len(chunk) {
			return
		}
	}
}

// snapshot returns the keys with state now.
func (k *Keyed[K, T]) snapshot() []*keyMember[K, T] {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]*keyMember[K, T](nil), k.members...)
}

// publishClock stores a new tick of the keys' clock and returns it.
func (k *Keyed[K, T]) publishClock() *tick {
	d := time.Since(k.start)
	t := &tick{ns: int64(d), at: k.start.Add(d)}
	k.clock.Store(t)
	return t
}

// maintain is the keyed pool's one maintainer goroutine, for every key:
// every tick it publishes the keys' clock to each key's pool and does its
// tick's work (Pool.tend: reaping, leaks, MinIdle), starts the health
// checks that are due (one goroutine runs them all, key after key), and
// looks for the room that keys still need (tendRoom) whenever that is due.
// It exits when Close ends the keyed pool's context.
func (k *Keyed[K, T]) maintain() {
	defer k.goroutine(-1)
	tk := time.NewTicker(k.tick)
	defer tk.Stop()
	room := time.NewTimer(time.Hour)
	defer room.Stop()
	var healthRunning atomic.Bool
	for ticks := 1; ; {
		select {
		case <-k.ctx.Done():
			return
		case <-tk.C:
			ticks++
			t := k.publishClock()
			var due []*keyMember[K, T]
			health := k.kcfg.HealthCheckPeriod > 0 && !healthRunning.Load()
			k.eachMember(func(m *keyMember[K, T]) {
				m.p.clock.Store(t)
				m.p.tend(ticks, m.poked.Swap(false))
				if health {
					if _, ok := m.p.healthDue(); ok {
						due = append(due, m)
					}
				}
			})
			if len(due) > 0 {
				healthRunning.Store(true)
				k.goroutine(1)
				go func() {
					defer k.goroutine(-1)
					defer healthRunning.Store(false)
					for _, m := range due {
						m.p.healthPass(t.ns)
					}
				}()
			}
		case <-k.kick:
			k.eachPoked()
		case <-room.C:
		}
		if d := k.tendRoom(); d > 0 {
			room.Reset(d)
		}
	}
}

// eachPoked reaps the keys whose pool asked for a pass (Reset, a shrink),
// if any did: a kick for room walks no key.
func (k *Keyed[K, T]) eachPoked() {
	if k.pokes.Swap(0) == 0 {
		return
	}
	k.eachMember(func(m *keyMember[K, T]) {
		if m.poked.Swap(false) {
			m.p.reap()
		}
	})
}

// roomFor looks for room for m's waiters at the global cap (see budget):
// for a key that holds nothing, the least recently used surplus object of
// a key nobody waits for or an idle one of such a key that holds two or
// more, and, once m has starved for bound, any such idle object; once
// m has had more waiters than objects for bound, one idle for bound. It
// reports false when m needs room and none was found: the maintainer looks
// again (tendRoom).
func (k *Keyed[K, T]) roomFor(m *keyMember[K, T]) bool {
	b := &k.b
	b.mu.Lock()
	b.place(m, m.p.live.Load())
	if b.used < b.max {
		b.mu.Unlock()
		return true // free room: the key's own reserve, or pump, takes it
	}
	minIdle, reason := int64(-1), 0
	switch {
	case m.list == &b.starving:
		if m.coming == 0 {
			minIdle, reason = b.surplusAge(), reasonEvict
			if b.now()-m.since >= b.bound() {
				minIdle = 0
			}
		}
	case (m.list == &b.hungry || m.list == &b.wanting) && b.need(m) > 0:
		// Its waiters found no object of its own (dispatch took those
		// first): surplus objects are room nobody uses; once it has had
		// more waiters than objects for bound, so are objects idle for
		// bound.
		minIdle, reason = b.surplusAge(), reasonEvictSurplus
		if b.hungryFor(m, b.now()) {
			minIdle, reason = b.bound(), reasonEvictHot
		}
	}
	if minIdle < 0 {
		b.mu.Unlock()
		return true
	}
	m.coming++
	m.trying++
	b.mu.Unlock()
	ok := k.evictFor(m, minIdle, reason)
	b.mu.Lock()
	m.trying--
	if !ok {
		m.coming--
	}
	b.mu.Unlock()
	return ok
}

// tendRoom looks for room for the keys at the heads of the lists that
// still need it — starving keys, and hungry ones (a surplus object, or one
// idle for bound once they have had more waiters than objects for bound) —
// and returns when to look again (0: nothing to look for). Free room goes
// to the keys that need it (pump).
func (k *Keyed[K, T]) tendRoom() time.Duration {
	b := &k.b
	var todo [2 * walkLimit]*keyMember[K, T]
	n := 0
	b.mu.Lock()
	if b.used < b.max {
		b.mu.Unlock()
		b.pump()
		return 0
	}
	// Each walk looks at a bounded number of keys from its list's head,
	// the keys that have needed room longest.
	i := 0
	for m := b.starving.head; m != nil && i < walkLimit; m = m.next {
		i++
		if m.coming == 0 {
			todo[n] = m
			n++
		}
	}
	i = 0
	for m := b.hungry.head; m != nil && i < walkLimit; m = m.next {
		i++
		if b.need(m) > 0 {
			todo[n] = m
			n++
		}
	}
	b.mu.Unlock()
	again := false
	for _, m := range todo[:n] {
		if !k.roomFor(m) {
			again = true
		}
	}
	if !again {
		return 0
	}
	// Again within a quarter of bound: an object released idle where
	// nobody waits, or one that comes of age, is found that late at most.
	return time.Duration(max(b.bound()/4, int64(time.Millisecond)))
}

// evictFor closes, for m, the least recently used idle object of another
// key that nobody waits for and that has been idle at least minIdle (see
// victim), counted under reason (a hungry key's victim idle past
// surplusAge counts as surplus); it reports whether it found one. The
// slot, once the close returns, goes to m first.
func (k *Keyed[K, T]) evictFor(m *keyMember[K, T], minIdle int64, reason int) bool {
	e, q, idle := k.victim(m, minIdle, reason == reasonEvict)
	if e == nil {
		return false
	}
	if reason == reasonEvictHot && idle >= k.b.surplusAge() {
		reason = reasonEvictSurplus
	}
	q.evict(e, reason, m.p)
	return true
}

// victimSample is how many keys a victim is looked for among (all of them
// when there are no more).
const victimSample = 64

// victim claims the least recently used idle object of a key other than m
// that nobody waits for, idle at least minIdle (to the clock's resolution:
// an object counts as idle since the tick of its release) or, if spare,
// held by a key that holds two objects or more (it can spare one: see
// keyMember.yield), among every key or, past victimSample keys, that many
// drawn at random. It returns the object, its pool and how long it was
// idle, or nil.
func (k *Keyed[K, T]) victim(m *keyMember[K, T], minIdle int64, spare bool) (*entry[T], *Pool[T], int64) {
	var sample [victimSample]*keyMember[K, T]
	k.mu.Lock()
	n := len(k.members)
	if n <= len(sample) {
		n = copy(sample[:], k.members)
	} else {
		for i := range sample {
			sample[i] = k.members[rand.IntN(len(k.members))]
		}
		n = len(sample)
	}
	k.mu.Unlock()
	now := k.clock.Load().ns
	if minIdle > 0 {
		minIdle += int64(k.tick) // lastUsed is the tick before the release: see reap
	}
	for range 3 {
		var best *entry[T]
		var bestT int64
		for _, q := range sample[:n] {
			if q == m || q.p.state.Load()&(waiterMask|closedBit) != 0 {
				continue
			}
			least := minIdle
			if spare && q.p.live.Load() >= 2 {
				least = 0
			}
			q.p.reg.each(func(e *entry[T]) {
				if e.state.Load()&1 != 0 {
					return
				}
				if t := e.lastUsed.Load(); now-t >= least && (best == nil || t < bestT) {
					best, bestT = e, t
				}
			})
		}
		if best == nil {
			return nil, nil, 0
		}
		if _, ok := claim(best); ok {
			return best, best.p, now - bestT
		}
	}
	return nil, nil, 0
}
