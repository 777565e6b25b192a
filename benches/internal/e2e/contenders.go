package e2e

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/puddle/v2"

	"github.com/poolkit/poolkit/benches/internal/workload"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// conns is how to make, use and recognise broken connections of type T to
// one server. Every contender of the server runs the same code through it:
// the same dial, the same request.
type conns[T any] struct {
	// manager returns a manager whose Connect adds one to dials for each
	// connection it makes. Where it also implements manager.ReleaseChecker,
	// the puddle contender runs that check on release as poolkit does.
	manager func(dials *atomic.Int64) manager.Manager[T]
	// request returns the request of one goroutine (it may keep a buffer).
	request func() func(ctx context.Context, c T) error
	// broken reports whether c must be closed after its request failed
	// with err.
	broken func(c T, err error) bool
}

// counting is a manager that counts the connections its Connect makes.
type counting[T any] struct {
	manager.Manager[T]
	n *atomic.Int64
}

func (m counting[T]) Connect(ctx context.Context) (T, error) {
	c, err := m.Manager.Connect(ctx)
	if err == nil {
		m.n.Add(1)
	}
	return c, err
}

// Entry names and keys.
const (
	namePoolkit    = "poolkit"
	namePuddle     = "puddle"
	nameDedicated  = "dedicated"
	nameNoPool     = "no pool"
	namePgxpool    = "pgxpool"
	namePgxmanager = "pgxmanager"
	nameSQL        = "database/sql"
)

// poolkit pools the connections in a pool.Pool[T] with the defaults and
// MaxSize maxSize. A connection whose request broke it is destroyed, any
// other released.
func (k conns[T]) poolkit(ctx context.Context, maxSize int) workload.Entry {
	return workload.Entry{Name: namePoolkit, Key: "Impl=poolkit", Setup: func() (workload.Instance, error) {
		var dials atomic.Int64
		p, err := pool.New[T](k.manager(&dials), pool.Config{MaxSize: maxSize})
		if err != nil {
			return workload.Instance{}, err
		}
		return workload.Instance{
			Worker: func(int) workload.Op {
				req := k.request()
				return func() error {
					l, err := p.Acquire(ctx)
					if err != nil {
						return err
					}
					c := l.Value()
					if err := req(ctx, c); err != nil {
						if k.broken(c, err) {
							l.Destroy()
						} else {
							l.Release()
						}
						return err
					}
					l.Release()
					return nil
				}
			},
			Close: func() { _ = p.Close(context.Background()) },
			Dials: dials.Load,
		}, nil
	}}
}

// held is a connection in puddle, with its hand-out count for Recycle.
type held[T any] struct {
	c    T
	uses uint64
}

// puddle pools the same connections in jackc/puddle/v2, made and closed by
// the same manager. puddle checks nothing on its own; so that both pools do
// the same work per request, a connection handed out again passes the
// manager's Recycle first (as poolkit runs it: not for a fresh connection),
// and, where the manager has one, its release check on release.
func (k conns[T]) puddle(ctx context.Context, maxSize int) workload.Entry {
	return workload.Entry{Name: namePuddle, Key: "Impl=puddle", Setup: func() (workload.Instance, error) {
		var dials atomic.Int64
		p, err := newPuddled(k.manager(&dials), maxSize)
		if err != nil {
			return workload.Instance{}, err
		}
		return workload.Instance{
			Worker: func(int) workload.Op {
				req := k.request()
				return func() error { return p.do(ctx, k, req) }
			},
			Close: p.pool.Close,
			Dials: dials.Load,
		}, nil
	}}
}

// puddled is a puddle pool of held connections made by m, with poolkit's
// checks around it.
type puddled[T any] struct {
	pool  *puddle.Pool[*held[T]]
	m     manager.Manager[T]
	check manager.ReleaseChecker[T] // nil if m has none
}

func newPuddled[T any](m manager.Manager[T], maxSize int) (*puddled[T], error) {
	p := &puddled[T]{m: m}
	p.check, _ = m.(manager.ReleaseChecker[T])
	pool, err := puddle.NewPool(&puddle.Config[*held[T]]{
		Constructor: func(ctx context.Context) (*held[T], error) {
			c, err := m.Connect(ctx)
			if err != nil {
				return nil, err
			}
			return &held[T]{c: c}, nil
		},
		Destructor: func(h *held[T]) { _ = m.Close(h.c) },
		MaxSize:    int32(maxSize),
	})
	p.pool = pool
	return p, err
}

// acquire acquires a connection that passes Recycle, destroying those that
// do not.
func (p *puddled[T]) acquire(ctx context.Context) (*puddle.Resource[*held[T]], error) {
	for {
		r, err := p.pool.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		h := r.Value()
		if h.uses > 0 {
			met := manager.Metrics{Created: r.CreationTime(), LastUsed: time.Now().Add(-r.IdleDuration()), Uses: h.uses}
			if p.m.Recycle(ctx, h.c, met) != nil {
				r.Destroy()
				continue
			}
		}
		h.uses++
		return r, nil
	}
}

// release returns r, or destroys it if the release check refuses it.
func (p *puddled[T]) release(r *puddle.Resource[*held[T]]) {
	if p.check != nil && p.check.CheckRelease(r.Value().c) != nil {
		r.Destroy()
		return
	}
	r.Release()
}

// do runs one request on a pooled connection: a connection the request
// broke is destroyed, any other released.
func (p *puddled[T]) do(ctx context.Context, k conns[T], req func(context.Context, T) error) error {
	r, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	c := r.Value().c
	if err := req(ctx, c); err != nil {
		if k.broken(c, err) {
			r.Destroy()
		} else {
			p.release(r)
		}
		return err
	}
	p.release(r)
	return nil
}

// dedicatedSlot is one goroutine's own connection.
type dedicatedSlot[T any] struct {
	c  T
	ok bool
}

// dedicated is the upper bound: each goroutine dials one connection of its
// own and runs every request on it, with no pool and no check. A connection
// that breaks is closed and dialled again on the next request.
func (k conns[T]) dedicated(ctx context.Context) workload.Entry {
	return workload.Entry{Name: nameDedicated, Key: "Impl=dedicated", Setup: func() (workload.Instance, error) {
		var (
			dials atomic.Int64
			mu    sync.Mutex
			slots []*dedicatedSlot[T]
		)
		m := k.manager(&dials)
		return workload.Instance{
			Worker: func(int) workload.Op {
				req := k.request()
				s := new(dedicatedSlot[T])
				mu.Lock()
				slots = append(slots, s)
				mu.Unlock()
				if c, err := m.Connect(ctx); err == nil { // else on the first request
					s.c, s.ok = c, true
				}
				return func() error {
					if !s.ok {
						c, err := m.Connect(ctx)
						if err != nil {
							return err
						}
						s.c, s.ok = c, true
					}
					err := req(ctx, s.c)
					if err != nil && k.broken(s.c, err) {
						_ = m.Close(s.c)
						s.ok = false
					}
					return err
				}
			},
			Close: func() {
				mu.Lock()
				defer mu.Unlock()
				for _, s := range slots {
					if s.ok {
						_ = m.Close(s.c)
						s.ok = false
					}
				}
			},
			Dials: dials.Load,
		}, nil
	}}
}

// noPool dials a connection for every request and closes it afterwards.
func (k conns[T]) noPool(ctx context.Context) workload.Entry {
	return workload.Entry{Name: nameNoPool, Key: "Impl=nopool", Setup: func() (workload.Instance, error) {
		var dials atomic.Int64
		m := k.manager(&dials)
		return workload.Instance{
			Worker: func(int) workload.Op {
				req := k.request()
				return func() error {
					c, err := m.Connect(ctx)
					if err != nil {
						return err
					}
					err = req(ctx, c)
					if cerr := m.Close(c); err == nil {
						err = cerr
					}
					return err
				}
			},
			Close: func() {},
			Dials: dials.Load,
		}, nil
	}}
}
