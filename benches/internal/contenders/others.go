package contenders

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/jackc/puddle/v2"
	gobufferpool "github.com/libp2p/go-buffer-pool"
	"github.com/valyala/bytebufferpool"

	"github.com/poolkit/poolkit/benches/internal/cacheline"
)

// ---- jackc/puddle/v2 ----

type puddlePool struct{ p *puddle.Pool[*Conn] }

// newPuddlePool makes a puddle pool. puddle has no acquire timeout of its
// own: AcquireTimeout is ignored (callers pass a context with a deadline).
func newPuddlePool(c PoolConfig) (Pool, error) {
	p, err := puddle.NewPool(&puddle.Config[*Conn]{
		Constructor: func(context.Context) (*Conn, error) { return new(Conn), nil },
		Destructor:  func(*Conn) {},
		MaxSize:     int32(c.MaxSize),
	})
	if err != nil {
		return nil, err
	}
	return puddlePool{p}, nil
}

func (p puddlePool) Cycle(ctx context.Context) error {
	r, err := p.p.Acquire(ctx)
	if err != nil {
		return err
	}
	r.Value().Uses++
	r.Release()
	return nil
}

func (p puddlePool) Holder(n int) Holder {
	return &puddleHolder{p: p.p, res: holderSlots[*puddle.Resource[*Conn]](n)}
}

func (p puddlePool) Close() { p.p.Close() }

type puddleHolder struct {
	_   cacheline.Pad
	p   *puddle.Pool[*Conn]
	res []*puddle.Resource[*Conn]
	_   cacheline.Pad
}

func (h *puddleHolder) AcquireAll(ctx context.Context) error {
	for len(h.res) < cap(h.res) {
		r, err := h.p.Acquire(ctx)
		if err != nil {
			h.ReleaseAll()
			return err
		}
		r.Value().Uses++
		h.res = append(h.res, r)
	}
	return nil
}

func (h *puddleHolder) ReleaseAll() {
	for i, r := range h.res {
		r.Release()
		h.res[i] = nil
	}
	h.res = h.res[:0]
}

// ---- a buffered channel of idle objects ----

// chanPool is the pool many Go programs write first: idle objects in a
// buffered channel of capacity MaxSize, an atomic count of live objects, and
// a select on the channel, the context and (if AcquireTimeout is set) a
// timer when it must wait. Waiters are served in the runtime's channel order.
type chanPool struct {
	idle    chan *Conn
	live    atomic.Int64
	max     int64
	timeout time.Duration
}

func newChanPool(c PoolConfig) (Pool, error) {
	return &chanPool{idle: make(chan *Conn, c.MaxSize), max: int64(c.MaxSize), timeout: c.AcquireTimeout}, nil
}

func (p *chanPool) acquire(ctx context.Context) (*Conn, error) {
	select {
	case c := <-p.idle:
		return c, nil
	default:
	}
	if p.live.Add(1) <= p.max {
		return new(Conn), nil
	}
	p.live.Add(-1)
	var timeout <-chan time.Time
	if p.timeout > 0 {
		t := time.NewTimer(p.timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case c := <-p.idle:
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-timeout:
		return nil, ErrTimeout
	}
}

func (p *chanPool) release(c *Conn) { p.idle <- c } // never blocks: capacity MaxSize

func (p *chanPool) Cycle(ctx context.Context) error {
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	c.Uses++
	p.release(c)
	return nil
}

func (p *chanPool) Holder(n int) Holder {
	return &connHolder{acquire: p.acquire, release: p.release, conns: holderSlots[*Conn](n)}
}

func (p *chanPool) Close() {
	for {
		select {
		case <-p.idle:
		default:
			return
		}
	}
}

// connHolder is the Holder of the pools that hand out a bare *Conn.
type connHolder struct {
	_       cacheline.Pad
	acquire func(context.Context) (*Conn, error)
	release func(*Conn)
	conns   []*Conn
	_       cacheline.Pad
}

func (h *connHolder) AcquireAll(ctx context.Context) error {
	for len(h.conns) < cap(h.conns) {
		c, err := h.acquire(ctx)
		if err != nil {
			h.ReleaseAll()
			return err
		}
		c.Uses++
		h.conns = append(h.conns, c)
	}
	return nil
}

func (h *connHolder) ReleaseAll() {
	for i, c := range h.conns {
		h.release(c)
		h.conns[i] = nil
	}
	h.conns = h.conns[:0]
}

// ---- a mutex-guarded slice with FIFO waiters ----

// mutexPool is the textbook locked pool: a LIFO slice of idle objects and a
// FIFO queue of waiters under one sync.Mutex, with direct hand-off to the
// oldest waiter on release (the shape of database/sql, minus its random
// waiter order). Objects are made outside the lock.
type mutexPool struct {
	mu      sync.Mutex
	idle    []*Conn       // guarded by mu
	waiters []chan *Conn  // guarded by mu; oldest first
	live    int           // guarded by mu
	max     int           // read-only
	timeout time.Duration // read-only
	_       [0]func()     // not comparable
}

func newMutexPool(c PoolConfig) (Pool, error) {
	return &mutexPool{idle: make([]*Conn, 0, c.MaxSize), max: c.MaxSize, timeout: c.AcquireTimeout}, nil
}

func (p *mutexPool) acquire(ctx context.Context) (*Conn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	if p.live < p.max {
		p.live++
		p.mu.Unlock()
		return new(Conn), nil
	}
	ch := make(chan *Conn, 1)
	p.waiters = append(p.waiters, ch)
	p.mu.Unlock()

	var timeout <-chan time.Time
	if p.timeout > 0 {
		t := time.NewTimer(p.timeout)
		defer t.Stop()
		timeout = t.C
	}
	var err error
	select {
	case c := <-ch:
		return c, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout:
		err = ErrTimeout
	}
	p.mu.Lock()
	for i, w := range p.waiters {
		if w == ch {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			p.mu.Unlock()
			return nil, err
		}
	}
	p.mu.Unlock()
	// A releaser handed us an object as we gave up: pass it on.
	p.release(<-ch)
	return nil, err
}

func (p *mutexPool) release(c *Conn) {
	p.mu.Lock()
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters[0] = nil
		p.waiters = p.waiters[1:]
		p.mu.Unlock()
		ch <- c // buffered: never blocks
		return
	}
	p.idle = append(p.idle, c)
	p.mu.Unlock()
}

func (p *mutexPool) Cycle(ctx context.Context) error {
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	c.Uses++
	p.release(c)
	return nil
}

func (p *mutexPool) Holder(n int) Holder {
	return &connHolder{acquire: p.acquire, release: p.release, conns: holderSlots[*Conn](n)}
}

func (p *mutexPool) Close() {
	p.mu.Lock()
	clear(p.idle)
	p.idle = p.idle[:0]
	p.mu.Unlock()
}

// ---- sync.Pool: the floor ----

// syncPool is the floor, not a real pool: no maximum, no timeout, and the GC
// empties it. MaxSize and AcquireTimeout are ignored.
type syncPool struct{ p *sync.Pool }

func newSyncPool(PoolConfig) (Pool, error) {
	return syncPool{&sync.Pool{New: func() any { return new(Conn) }}}, nil
}

func (p syncPool) acquire(context.Context) (*Conn, error) { return p.p.Get().(*Conn), nil }
func (p syncPool) release(c *Conn)                        { p.p.Put(c) }

func (p syncPool) Cycle(context.Context) error {
	c := p.p.Get().(*Conn)
	c.Uses++
	p.p.Put(c)
	return nil
}

func (p syncPool) Holder(n int) Holder {
	return &connHolder{acquire: p.acquire, release: p.release, conns: holderSlots[*Conn](n)}
}

func (syncPool) Close() {}

// ---- byte pools ----

// makeBytes allocates every buffer and lets the garbage collector reclaim it:
// the baseline.
type makeBytes struct{}

func newMakeBytes(BytesConfig) (Bytes, error) { return makeBytes{}, nil }

func (makeBytes) Get(n int) Buf { return Buf{B: make([]byte, n)} }
func (makeBytes) Put(Buf)       {}
func (makeBytes) Close()        {}

// syncBytes is one sync.Pool of *[]byte per size the workload uses, the
// idiom staticcheck's SA6002 recommends. A size it was not made for is
// allocated and dropped.
type syncBytes struct {
	sizes []int
	pools []sync.Pool
}

func newSyncBytes(c BytesConfig) (Bytes, error) {
	p := &syncBytes{sizes: append([]int(nil), c.Sizes...), pools: make([]sync.Pool, len(c.Sizes))}
	for i, n := range p.sizes {
		p.pools[i].New = func() any {
			b := make([]byte, n)
			return &b
		}
	}
	return p, nil
}

func (p *syncBytes) index(n int) int {
	for i, s := range p.sizes {
		if s == n {
			return i
		}
	}
	return -1
}

func (p *syncBytes) Get(n int) Buf {
	i := p.index(n)
	if i < 0 {
		return Buf{B: make([]byte, n)}
	}
	bp := p.pools[i].Get().(*[]byte)
	return Buf{B: (*bp)[:n], ref: unsafe.Pointer(bp)}
}

func (p *syncBytes) Put(b Buf) {
	bp := (*[]byte)(b.ref)
	if bp == nil {
		return
	}
	if i := p.index(len(b.B)); i >= 0 {
		*bp = b.B
		p.pools[i].Put(bp)
	}
}

func (p *syncBytes) Close() {}

// goBufferPool is libp2p/go-buffer-pool: sync.Pools by power-of-two class;
// Put boxes the slice header (one allocation).
type goBufferPool struct{ p *gobufferpool.BufferPool }

func newGoBufferPool(BytesConfig) (Bytes, error) {
	return goBufferPool{new(gobufferpool.BufferPool)}, nil
}

func (p goBufferPool) Get(n int) Buf { return Buf{B: p.p.Get(n)} }
func (p goBufferPool) Put(b Buf)     { p.p.Put(b.B) }
func (p goBufferPool) Close()        {}

// byteBufferPool is valyala/bytebufferpool: one sync.Pool of *ByteBuffer that
// calibrates which sizes it keeps. A buffer too small for n is replaced by a
// fresh one.
type byteBufferPool struct{ p *bytebufferpool.Pool }

func newByteBufferPool(BytesConfig) (Bytes, error) {
	return byteBufferPool{new(bytebufferpool.Pool)}, nil
}

func (p byteBufferPool) Get(n int) Buf {
	bb := p.p.Get()
	if cap(bb.B) < n {
		bb.B = make([]byte, n)
	}
	bb.B = bb.B[:n]
	return Buf{B: bb.B, ref: unsafe.Pointer(bb)}
}

func (p byteBufferPool) Put(b Buf) {
	bb := (*bytebufferpool.ByteBuffer)(b.ref)
	if bb == nil {
		return
	}
	bb.B = b.B
	p.p.Put(bb)
}

func (p byteBufferPool) Close() {}
