package contenders

// The poolkit adapters, in one file: the pool and bytepool APIs are young,
// and this is the only place that has to follow them.

import (
	"context"
	"fmt"
	"github.com/poolkit/poolkit/exchange"
	"io"
	"log/slog"
	"time"

	"github.com/poolkit/poolkit/benches/internal/cacheline"
	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// poolkitConfig maps the benchmark's settings to pool.Config. (With the
// exchange off, the pool deepens its per-P stacks until every object fits.)
func poolkitConfig(c PoolConfig) (pool.Config, error) {
	cfg := pool.Config{MaxSize: c.MaxSize, AcquireTimeout: c.AcquireTimeout, LeakThreshold: c.LeakThreshold}
	switch c.Observer {
	case "":
	case "nop":
		cfg.Observer = pool.NopObserver{}
	case "slog":
		cfg.Observer = pool.NewSlogObserver(slog.New(slog.NewTextHandler(io.Discard, nil)), time.Second)
	default:
		return cfg, fmt.Errorf("contenders: unknown poolkit observer %q", c.Observer)
	}
	switch c.Exchange {
	case "", "ring":
		cfg.Exchange = exchange.KindRing
	case "mutex":
		cfg.Exchange = exchange.KindMutex
	case "none":
		cfg.Exchange = exchange.KindNone
	default:
		return cfg, fmt.Errorf("contenders: unknown poolkit exchange %q", c.Exchange)
	}
	return cfg, nil
}

type poolkitPool struct{ p *pool.Pool[*Conn] }

// newPoolkitPool's manager has no check (no RecycleFunc: the pool skips
// Recycle); newPoolkitRecyclePool's checks every reuse and always passes.
func newPoolkitPool(c PoolConfig) (Pool, error) { return newPoolkit(c, nil) }

func newPoolkitRecyclePool(c PoolConfig) (Pool, error) {
	return newPoolkit(c, func(context.Context, *Conn, manager.Metrics) error { return nil })
}

func newPoolkit(c PoolConfig, recycle func(context.Context, *Conn, manager.Metrics) error) (Pool, error) {
	cfg, err := poolkitConfig(c)
	if err != nil {
		return nil, err
	}
	m := manager.Funcs[*Conn]{ConnectFunc: func(context.Context) (*Conn, error) { return new(Conn), nil }, RecycleFunc: recycle}
	p, err := pool.New[*Conn](m, cfg)
	if err != nil {
		return nil, err
	}
	return poolkitPool{p}, nil
}

func (p poolkitPool) Cycle(ctx context.Context) error {
	l, err := p.p.Acquire(ctx)
	if err != nil {
		return err
	}
	l.Value().Uses++
	l.Release()
	return nil
}

func (p poolkitPool) Holder(n int) Holder {
	return &poolkitHolder{p: p.p, leases: holderSlots[pool.Lease[*Conn]](n)}
}

func (p poolkitPool) Close() { _ = p.p.Close(context.Background()) }

type poolkitHolder struct {
	_      cacheline.Pad
	p      *pool.Pool[*Conn]
	leases []pool.Lease[*Conn]
	_      cacheline.Pad
}

func (h *poolkitHolder) AcquireAll(ctx context.Context) error {
	for len(h.leases) < cap(h.leases) {
		l, err := h.p.Acquire(ctx)
		if err != nil {
			h.ReleaseAll()
			return err
		}
		l.Value().Uses++
		h.leases = append(h.leases, l)
	}
	return nil
}

func (h *poolkitHolder) ReleaseAll() {
	for i, l := range h.leases {
		l.Release()
		h.leases[i] = pool.Lease[*Conn]{}
	}
	h.leases = h.leases[:0]
}

// ReadStats reads the pool's statistics (see StatsReader).
func (p poolkitPool) ReadStats() { _ = p.p.Stats() }

type poolkitBytes struct{ p *bytepool.Pool }

func newPoolkitBytes(c BytesConfig) (Bytes, error) {
	p, err := bytepool.New(bytepool.Config{Depth: c.Depth})
	if err != nil {
		return nil, err
	}
	return poolkitBytes{p}, nil
}

func (p poolkitBytes) Get(n int) Buf { return Buf{B: p.p.Get(n)} }
func (p poolkitBytes) Put(b Buf)     { p.p.Put(b.B) }
func (p poolkitBytes) Close()        { p.p.Trim() }

// ReadStats reads the pool's statistics (see StatsReader).
func (p poolkitBytes) ReadStats() { _ = p.p.Stats() }

// poolkitKeyed is poolkit's keyed pool used through one key: what a key
// costs over the single pool (the table lookup) on the paths it shares.
type poolkitKeyed struct {
	k *pool.Keyed[string, *Conn]
}

// keyedKey is the key poolkitKeyed's ops use.
const keyedKey = "tenant-0042"

// newPoolkitKeyedPool's manager has no check, as newPoolkitPool's;
// newPoolkitKeyedRecyclePool's checks every reuse and always passes, as
// newPoolkitRecyclePool's.
func newPoolkitKeyedPool(c PoolConfig) (Pool, error) { return newPoolkitKeyed(c, nil) }

func newPoolkitKeyedRecyclePool(c PoolConfig) (Pool, error) {
	return newPoolkitKeyed(c, func(context.Context, *Conn, manager.Metrics) error { return nil })
}

func newPoolkitKeyed(c PoolConfig, recycle func(context.Context, *Conn, manager.Metrics) error) (Pool, error) {
	single, err := poolkitConfig(c)
	if err != nil {
		return nil, err
	}
	m := manager.KeyedFuncs[string, *Conn]{
		ConnectFunc: func(context.Context, string) (*Conn, error) { return new(Conn), nil },
		RecycleFunc: recycle,
	}
	k, err := pool.NewKeyed[string, *Conn](m, pool.KeyedConfig{
		MaxSize: single.MaxSize,
		PerKey:  pool.Config{AcquireTimeout: single.AcquireTimeout, LeakThreshold: single.LeakThreshold, Observer: single.Observer, Exchange: single.Exchange},
	})
	if err != nil {
		return nil, err
	}
	return poolkitKeyed{k}, nil
}

func (p poolkitKeyed) Cycle(ctx context.Context) error {
	l, err := p.k.Acquire(ctx, keyedKey)
	if err != nil {
		return err
	}
	l.Value().Uses++
	l.Release()
	return nil
}

func (p poolkitKeyed) Holder(n int) Holder {
	return &poolkitKeyedHolder{k: p.k, leases: holderSlots[pool.Lease[*Conn]](n)}
}

func (p poolkitKeyed) Close() { _ = p.k.Close(context.Background()) }

// ReadStats reads the pool's statistics (see StatsReader).
func (p poolkitKeyed) ReadStats() { _ = p.k.Stats() }

type poolkitKeyedHolder struct {
	_      cacheline.Pad
	k      *pool.Keyed[string, *Conn]
	leases []pool.Lease[*Conn]
	_      cacheline.Pad
}

func (h *poolkitKeyedHolder) AcquireAll(ctx context.Context) error {
	for len(h.leases) < cap(h.leases) {
		l, err := h.k.Acquire(ctx, keyedKey)
		if err != nil {
			h.ReleaseAll()
			return err
		}
		l.Value().Uses++
		h.leases = append(h.leases, l)
	}
	return nil
}

func (h *poolkitKeyedHolder) ReleaseAll() {
	for i, l := range h.leases {
		l.Release()
		h.leases[i] = pool.Lease[*Conn]{}
	}
	h.leases = h.leases[:0]
}
