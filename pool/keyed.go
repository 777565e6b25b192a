package pool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolkit/poolkit/internal/cacheline"
	"github.com/poolkit/poolkit/internal/configerr"
	"github.com/poolkit/poolkit/internal/shard"
	"github.com/poolkit/poolkit/manager"
)

// KeyedConfig configures a [Keyed] pool. MaxSize bounds all keys together,
// MaxSizePerKey each key; the other fields mean what [Config]'s of the same
// names mean, for each key's objects (MinIdlePerKey is each key's MinIdle,
// MaxIdlePerKey its MaxIdle, MaxConnecting each key's own bound).
type KeyedConfig struct {
	// Name names the pool in errors and logs, as Config.Name does.
	Name string
	// MaxSize bounds the objects of all keys together — idle, leased,
	// connecting and being closed — exactly, as Config.MaxSize bounds a
	// pool's. Required (>= 1).
	MaxSize int
	// MaxSizePerKey bounds one key's objects, counted the same way; 0
	// means MaxSize.
	MaxSizePerKey int
	// MinIdlePerKey is kept idle for each key that has state (see Keyed):
	// within MaxSizePerKey, and only while no other key waits for room.
	MinIdlePerKey int
	// MaxIdlePerKey bounds each key's idle objects (Config.MaxIdle); 0
	// means no bound.
	MaxIdlePerKey int

	MaxLifetime       time.Duration
	LifetimeJitter    time.Duration
	MaxIdleTime       time.Duration
	MaxUses           int
	AcquireTimeout    time.Duration
	ConnectTimeout    time.Duration
	MaxConnecting     int
	LocalDepth        int
	Exchange          ExchangeKind
	HealthCheckPeriod time.Duration
	CheckTimeout      time.Duration
	LeakThreshold     time.Duration
	Observer          Observer
}

// memberConfig is the Config of each key's pool, normalized.
func (c KeyedConfig) memberConfig() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return Config{}, configerr.New(ErrInvalidConfig, "pool: KeyedConfig."+format, args...)
	}
	switch {
	case c.MaxSize < 1:
		return bad("MaxSize must be >= 1, got %d", c.MaxSize)
	case c.MaxSizePerKey < 0 || c.MaxSizePerKey > c.MaxSize:
		return bad("MaxSizePerKey must be in [0, MaxSize=%d], got %d", c.MaxSize, c.MaxSizePerKey)
	}
	perKey := c.MaxSizePerKey
	if perKey == 0 {
		perKey = c.MaxSize
	}
	switch {
	case c.MinIdlePerKey < 0 || c.MinIdlePerKey > perKey:
		return bad("MinIdlePerKey must be in [0, MaxSizePerKey=%d], got %d", perKey, c.MinIdlePerKey)
	case c.MaxIdlePerKey < 0 || (c.MaxIdlePerKey > 0 && c.MaxIdlePerKey < c.MinIdlePerKey):
		return bad("MaxIdlePerKey must be 0 or in [MinIdlePerKey=%d, ∞), got %d", c.MinIdlePerKey, c.MaxIdlePerKey)
	}
	cfg, err := Config{
		Name: c.Name, MaxSize: perKey, MinIdle: c.MinIdlePerKey, MaxIdle: c.MaxIdlePerKey,
		MaxLifetime: c.MaxLifetime, LifetimeJitter: c.LifetimeJitter, MaxIdleTime: c.MaxIdleTime,
		MaxUses: c.MaxUses, AcquireTimeout: c.AcquireTimeout, ConnectTimeout: c.ConnectTimeout,
		MaxConnecting: c.MaxConnecting, LocalDepth: c.LocalDepth, Exchange: c.Exchange,
		HealthCheckPeriod: c.HealthCheckPeriod, CheckTimeout: c.CheckTimeout,
		LeakThreshold: c.LeakThreshold, Observer: c.Observer,
	}.normalize()
	if err != nil {
		// The fields share their names; MaxSize is MaxSizePerKey here.
		msg := strings.Replace(err.Error(), "pool: Config.", "pool: KeyedConfig.", 1)
		return Config{}, configerr.New(ErrInvalidConfig, "%s", strings.ReplaceAll(msg, "MaxSize=", "MaxSizePerKey="))
	}
	return cfg, nil
}

// Keyed is a pool of objects made for keys — a tenant's database, a cluster
// node, an upstream host — under one budget: [KeyedConfig.MaxSize] bounds
// the objects of all keys together, exactly, and MaxSizePerKey each key's.
// Each key's objects are a [Pool]'s, with its lease, checks, lifetimes,
// Observer and Stats; the pools share the budget.
//
// At the global cap, a key that needs an object gets room by closing the
// least recently used idle object of a key that nobody waits for
// ([CloseEvict]); it waits only when nothing is idle anywhere. Waiters are
// served in arrival order across keys for global room, and in arrival order
// within a key for its own objects; an object released to a key nobody
// waits for, while another key's waiter waits for room, is closed and its
// slot goes to that waiter.
//
// A key's state (its pool) is made by its first Acquire and dropped once
// its last object has closed and nobody waits for it: memory follows the
// live objects and waiters, not the number of keys ever seen. A key must
// equal itself (a float NaN does not: such a key panics).
//
// All methods are safe for concurrent use. A Keyed must be closed with
// Close to stop its goroutines.
type Keyed[K comparable, T any] struct {
	mgr   manager.Keyed[K, T]
	cfg   KeyedConfig
	mcfg  Config    // each key's pool's
	start time.Time // every key's clock's origin, so that idle times compare
	b     budget[T]

	// table maps each key with state to its pool: copied on write (under
	// mu), read with one load on every Acquire.
	table  atomic.Pointer[map[K]*Pool[T]]
	closed atomic.Bool
	// hot is each P's last key and its pool, read and written only by
	// that P while pinned (as sync.Pool's private slot): hashing the key
	// for the table costs more than the rest of an Acquire's hot path. A
	// P beyond the slice (GOMAXPROCS grew), or a synchronised build, goes
	// to the table. A stale entry (its key's state dropped) ends in
	// ErrClosed from the pool it names, and the Acquire asks the table.
	hot []hotKey[K, T]

	mu   sync.Mutex // guards the writes of table, keys, past and closed
	keys map[*Pool[T]]K
	past Stats // the counts of the keys dropped so far
	// maintainers counts the members' maintainers that have not exited,
	// the dropped members' included: Close waits for them.
	maintainers sync.WaitGroup
}

// NewKeyed returns a keyed pool of objects made by m. It returns an error
// matching [ErrInvalidConfig], naming the field, if cfg is invalid. Each
// key's pool, made as the key is first asked for, runs a maintainer
// goroutine while the key has state; Close stops them all.
func NewKeyed[K comparable, T any](m manager.Keyed[K, T], cfg KeyedConfig) (*Keyed[K, T], error) {
	if m == nil {
		return nil, configerr.New(ErrInvalidConfig, "pool: NewKeyed: nil Keyed manager")
	}
	mcfg, err := cfg.memberConfig()
	if err != nil {
		return nil, err
	}
	k := &Keyed[K, T]{mgr: m, cfg: cfg, mcfg: mcfg, start: time.Now(), keys: map[*Pool[T]]K{},
		hot: make([]hotKey[K, T], runtime.GOMAXPROCS(0))}
	k.b.max = int64(cfg.MaxSize)
	k.b.members = k.eachMember
	k.b.onEmpty = k.drop
	k.table.Store(&map[K]*Pool[T]{})
	return k, nil
}

// keyedManager is the Manager of one key's pool.
type keyedManager[K comparable, T any] struct {
	m   manager.Keyed[K, T]
	key K
}

func (a *keyedManager[K, T]) Connect(ctx context.Context) (T, error) { return a.m.Connect(ctx, a.key) }

func (a *keyedManager[K, T]) Recycle(ctx context.Context, obj T, m manager.Metrics) error {
	return a.m.Recycle(ctx, obj, m)
}

func (a *keyedManager[K, T]) Close(obj T) error { return a.m.Close(obj) }

// hotKey is one P's entry of Keyed.hot, on cache lines of its own.
type hotKey[K comparable, T any] struct {
	_   cacheline.Pad
	key K
	p   *Pool[T]
	_   cacheline.Pad
}

// member returns key's pool if it was this P's last key (and is open),
// else nil: the caller asks lookup.
func (k *Keyed[K, T]) member(key K) *Pool[T] {
	pid := shard.Enter()
	if uint(pid) < uint(len(k.hot)) {
		if h := &k.hot[pid]; h.p != nil && h.key == key && h.p.state.Load()&closedBit == 0 {
			p := h.p
			shard.Exit()
			return p
		}
	}
	shard.Exit()
	return nil
}

// lookup returns key's pool from the table, made if the key has no state,
// and makes it this P's last one; nil once the keyed pool is closed.
func (k *Keyed[K, T]) lookup(key K) *Pool[T] {
	p := (*k.table.Load())[key]
	if p == nil {
		if p = k.add(key); p == nil {
			return nil
		}
	}
	pid := shard.Enter()
	if uint(pid) < uint(len(k.hot)) {
		h := &k.hot[pid]
		h.key, h.p = key, p
	}
	shard.Exit()
	return p
}

// add makes key's pool, unless another goroutine just did.
func (k *Keyed[K, T]) add(key K) *Pool[T] {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed.Load() {
		return nil
	}
	old := *k.table.Load()
	if p := old[key]; p != nil {
		return p
	}
	if key != key {
		panic("pool: Keyed: a key that is not equal to itself (a NaN) cannot be looked up again")
	}
	p := build(manager.Manager[T](&keyedManager[K, T]{k.mgr, key}), k.mcfg, any(k.mgr), k.start)
	p.kb = &k.b
	k.maintainers.Add(1)
	p.stopped = k.maintainers.Done
	t := make(map[K]*Pool[T], len(old)+1)
	maps.Copy(t, old)
	t[key] = p
	k.table.Store(&t)
	k.keys[p] = key
	// After it is in the table: a change of the budget's queue sets or
	// clears roomBit on the members in the table, under budget.mu.
	k.b.mu.Lock()
	if k.b.wants > 0 {
		p.state.Or(roomBit)
	}
	k.b.mu.Unlock()
	p.run()
	return p
}

// drop drops p's state if it has no object and no waiter: p is closed
// (any goroutine still holding it gets ErrClosed from it and asks again:
// see Acquire), leaves the table, and its counts go to the past. Whoever
// frees p's last slot, or leaves it without one, calls it.
func (k *Keyed[K, T]) drop(p *Pool[T]) {
	k.mu.Lock()
	defer k.mu.Unlock()
	key, ok := k.keys[p]
	if !ok || k.closed.Load() {
		return
	}
	// Under p's mu (no waiter queues meanwhile) and smu (no reserve raises
	// live meanwhile; a reserve that raised it before sees the closed bit
	// and gives the slot back, as with Close).
	p.mu.Lock()
	p.smu.Lock()
	empty := p.live.Load() == 0 && p.state.Load()&(waiterMask|closedBit) == 0 && p.busy.Load() == 0
	if empty {
		p.state.Or(closedBit)
	}
	p.smu.Unlock()
	p.mu.Unlock()
	if !empty {
		return
	}
	p.cancel(ErrClosed) // its maintainer exits
	p.dropHints()
	// Its counts only: a reserve that raced the drop may still hold a slot
	// it is about to give back (it saw the closed bit), and the gauges of
	// a dropped member are 0.
	s := p.Stats()
	s.Live, s.Idle, s.Leased, s.Connecting, s.Closing, s.Waiting = 0, 0, 0, 0, 0, 0
	k.past.add(s)
	old := *k.table.Load()
	t := make(map[K]*Pool[T], len(old))
	maps.Copy(t, old)
	delete(t, key)
	k.table.Store(&t)
	delete(k.keys, p)
}

// eachMember calls f on every key's pool until f returns false.
func (k *Keyed[K, T]) eachMember(f func(*Pool[T]) bool) {
	for _, p := range *k.table.Load() {
		if !f(p) {
			return
		}
	}
}

// Acquire returns a lease on an object for key, as [Pool.Acquire] does for
// a pool of key's objects: an idle one of key's, else a new one if key is
// under MaxSizePerKey and the keyed pool has room (made, if need be, by
// closing another key's least recently used idle object), else one released
// or connected for it while it waits. The lease is a [Lease] like any
// other. After Close, Acquire returns [ErrClosed]. A nil ctx panics.
func (k *Keyed[K, T]) Acquire(ctx context.Context, key K) (Lease[T], error) {
	p := k.member(key)
	if p == nil {
		if ctx == nil { // before the key's state is made
			panic("pool: Acquire: nil Context")
		}
		p = k.lookup(key)
	}
	for ; ; p = k.lookup(key) {
		if p == nil {
			return Lease[T]{}, ErrClosed
		}
		l, err := p.Acquire(ctx)
		if err == nil {
			return l, nil
		}
		if err != ErrClosed || k.closed.Load() {
			k.dropIfEmpty(p)
			return l, err
		}
		// The key's state was dropped as this Acquire reached it.
	}
}

// TryAcquire is [Pool.TryAcquire] for key: an idle object of key's if there
// is one and nobody waits for one, else [ErrExhausted] at once, after
// starting a connect if key and the keyed pool have room — or, at the
// global cap, after closing another key's least recently used idle object
// (if no such close is under way), so that a retry soon finds room.
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
			k.dropIfEmpty(p)
			return l, err
		}
	}
}

// dropIfEmpty drops p's state if a failed call left it with no object and
// no waiter (it never had one, or its waiter gave up).
func (k *Keyed[K, T]) dropIfEmpty(p *Pool[T]) {
	if p.live.Load() == 0 && p.state.Load()&(waiterMask|closedBit) == 0 && p.busy.Load() == 0 {
		k.drop(p)
	}
}

// Warm makes each key's pool hold what [Pool.Warm] makes it hold —
// max(MinIdlePerKey, 1) connected objects — within the budget, key after
// key, closing other keys' least recently used idle objects for room at
// the cap. It returns the errors of the keys that failed, joined, each naming
// its pool's error.
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
		p.busy.Add(1)
		err := p.Warm(ctx)
		p.busy.Add(-1)
		if err != ErrClosed || k.closed.Load() {
			if err != nil {
				k.dropIfEmpty(p)
			}
			return err
		}
	}
}

// Reset makes every object of every key created before it be closed, as
// [Pool.Reset] does.
func (k *Keyed[K, T]) Reset() {
	k.eachMember(func(p *Pool[T]) bool { p.Reset(); return true })
}

// ResetKey is Reset for key's objects only.
func (k *Keyed[K, T]) ResetKey(key K) {
	if p := (*k.table.Load())[key]; p != nil {
		p.Reset()
	}
}

// Stats returns the keyed pool's figures: every key's summed, with the
// counts of keys whose state has been dropped, and MaxSize the global one.
func (k *Keyed[K, T]) Stats() Stats {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.past
	for _, p := range *k.table.Load() {
		s.add(p.Stats())
	}
	s.MaxSize = k.cfg.MaxSize
	return s
}

// KeyStats returns key's figures, as its pool's [Pool.Stats]; false if the
// key has no state now (the counts of a dropped key are in Stats only).
func (k *Keyed[K, T]) KeyStats(key K) (Stats, bool) {
	p := (*k.table.Load())[key]
	if p == nil {
		return Stats{}, false
	}
	return p.Stats(), true
}

// RangeKeys calls f with each key that has state now and its figures, in
// no set order, until f returns false.
func (k *Keyed[K, T]) RangeKeys(f func(key K, s Stats) bool) {
	for key, p := range *k.table.Load() {
		if !f(key, p.Stats()) {
			return
		}
	}
}

// Len returns the number of keys that have state now.
func (k *Keyed[K, T]) Len() int { return len(*k.table.Load()) }

// Name returns KeyedConfig.Name.
func (k *Keyed[K, T]) Name() string {
	if k == nil {
		return ""
	}
	return k.cfg.Name
}

// Close closes every key's pool, as [Pool.Close] does, at once: waiters get
// [ErrClosed], idle objects are closed, leased ones as they are released.
// It returns nil once every key's pool is done and every goroutine the
// keyed pool started has exited (those of dropped keys included), or, when
// ctx ends first, the errors of the pools not done, joined.
func (k *Keyed[K, T]) Close(ctx context.Context) error {
	k.mu.Lock()
	k.closed.Store(true)
	t := *k.table.Load()
	k.mu.Unlock()
	errs := make([]error, 0, len(t))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range t {
		wg.Go(func() {
			if err := p.Close(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	stopped := make(chan struct{})
	go func() { k.maintainers.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("pool: Close: %w (still waiting for the maintainers of dropped keys)", ctx.Err()))
	}
	return errors.Join(errs...)
}
