package pool_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// stressDuration reads POOLKIT_STRESS_DURATION (a time.Duration; default 1s).
func stressDuration(t *testing.T) time.Duration {
	if s := os.Getenv("POOLKIT_STRESS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		require.NoError(t, err, "POOLKIT_STRESS_DURATION")
		return d
	}
	if testing.Short() {
		return 200 * time.Millisecond
	}
	return time.Second
}

// TestStress runs 64+ goroutines against a fault-injecting manager (connects
// that fail, are slow, or hang until their context ends; recycles that fail),
// with random cancels and timeouts, random Destroy and Detach, and SetMaxSize
// and Reset while running, checking the invariants throughout.
func TestStress(t *testing.T) {
	// Contended: 72 goroutines on 8 objects (waits, hand-offs, slot
	// hand-offs). Roomy: 64 goroutines on 64 objects (fast path, steals,
	// exchange, registry scan), with the same chaos.
	t.Run("MaxSize=8", func(t *testing.T) { stress(t, 8, 2, nil) })
	t.Run("MaxSize=64", func(t *testing.T) { stress(t, 64, 4, nil) })
	// The production options on the contended pool: health checks racing
	// acquirers for idle objects, bounded checks, MaxIdle closing on
	// release, leak scans, and an Observer on every Acquire, whose starts
	// and ends must pair.
	obs := &pairingObserver{}
	t.Run("MaxSize=8/Production", func(t *testing.T) {
		stress(t, 8, 2, func(c *pool.Config) {
			c.HealthCheckPeriod = time.Millisecond
			c.CheckTimeout = 10 * time.Millisecond
			c.LeakThreshold = 30 * time.Millisecond
			c.MaxIdle = 4
			c.Observer = obs
		})
		require.Equal(t, obs.starts.Load(), obs.ends.Load(), "every AcquireStart has its AcquireEnd")
		require.NotZero(t, obs.ends.Load())
	})
}

// pairingObserver counts acquire starts and ends.
type pairingObserver struct {
	pool.NopObserver
	starts, ends atomic.Int64
}

func (o *pairingObserver) AcquireStart(ctx context.Context) context.Context {
	o.starts.Add(1)
	return ctx
}

func (o *pairingObserver) AcquireEnd(context.Context, pool.AcquireEvent) { o.ends.Add(1) }

func stress(t *testing.T, maxSize, localDepth int, opts func(*pool.Config)) {
	dur := stressDuration(t) / 2
	var created, closed, detached atomic.Int64
	var violations atomic.Int64
	var firstViolation atomic.Pointer[string]
	violate := func(s string) {
		violations.Add(1)
		firstViolation.CompareAndSwap(nil, &s)
	}
	m := &stressMgr{created: &created, closed: &closed, violate: violate}
	cfg := pool.Config{
		MaxSize:        maxSize,
		MinIdle:        2,
		MaxLifetime:    40 * time.Millisecond,
		LifetimeJitter: 10 * time.Millisecond,
		MaxIdleTime:    15 * time.Millisecond,
		MaxUses:        40,
		ConnectTimeout: 20 * time.Millisecond,
		AcquireTimeout: 100 * time.Millisecond,
	}
	cfg = pool.WithLocalDepth(cfg, localDepth)
	if opts != nil {
		opts(&cfg)
	}
	p, err := pool.New[*obj](m, cfg)
	require.NoError(t, err)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	const workers = 72
	// inAcquire[i] is the deadline (unix ns) of worker i's Acquire in
	// progress, 0 when it is not in Acquire: the stranded-waiter detector.
	var inAcquire [workers]atomic.Int64
	for i := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 42))
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				deadline := time.Now().Add(100 * time.Millisecond) // AcquireTimeout
				switch r.IntN(4) {
				case 0:
					d := time.Duration(r.IntN(3000)) * time.Microsecond
					ctx, cancel = context.WithTimeout(ctx, d)
				case 1:
					ctx, cancel = context.WithCancel(ctx)
					time.AfterFunc(time.Duration(r.IntN(2000))*time.Microsecond, cancel)
				}
				inAcquire[i].Store(deadline.UnixNano())
				var l pool.Lease[*obj]
				var err error
				if r.IntN(8) == 0 {
					l, err = p.TryAcquire(ctx)
				} else {
					l, err = p.Acquire(ctx)
				}
				inAcquire[i].Store(0)
				cancel()
				if err != nil {
					continue
				}
				o := l.Value()
				if !o.inUse.CompareAndSwap(false, true) {
					violate("object handed to two holders")
				}
				if o.closed.Load() {
					violate("closed object handed out")
				}
				if r.IntN(4) == 0 {
					time.Sleep(time.Duration(r.IntN(200)) * time.Microsecond)
				}
				o.inUse.Store(false)
				switch r.IntN(40) {
				case 0:
					l.Destroy()
				case 1:
					l.Detach()
					detached.Add(1)
				default:
					l.Release()
				}
			}
		})
	}
	// Invariant 1 as the monitor checks it: live never exceeds bound. A grow
	// raises bound before it takes effect; a shrink sets target after it has
	// taken effect, and bound comes down to target once live is seen to fit
	// (nothing new is made above MaxSize, so it stays fitting). Both sides
	// hold bmu, and the monitor reads Stats under it.
	var bmu sync.Mutex
	bound, target := maxSize, maxSize
	setMaxSize := func(n int) {
		bmu.Lock()
		if n >= target {
			bound, target = max(bound, n), n
			p.SetMaxSize(n)
			bmu.Unlock()
			return
		}
		bmu.Unlock()
		p.SetMaxSize(n)
		bmu.Lock()
		target = n
		bmu.Unlock()
	}
	// Chaos: Reset and SetMaxSize while running.
	wg.Go(func() {
		r := rand.New(rand.NewPCG(7, 7))
		for {
			select {
			case <-stop:
				setMaxSize(maxSize)
				return
			case <-time.After(time.Duration(5+r.IntN(10)) * time.Millisecond):
			}
			if r.IntN(2) == 0 {
				p.Reset()
			} else {
				// Up to 1.5×: growing past the exchange's capacity swaps
				// in a bigger exchange while objects are parked.
				setMaxSize(maxSize/2 + r.IntN(maxSize+1))
			}
		}
	})
	// Monitor: live never exceeds bound (MaxSize, or the old MaxSize while
	// a shrink's surplus closes), every snapshot adds up (Created − Closed −
	// Detached == Live − Connecting), and no waiter is blocked a full second
	// past its deadline.
	monitorDone := make(chan struct{})
	go func() {
		defer close(monitorDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			bmu.Lock()
			st := p.Stats()
			if st.Live > bound {
				violate(fmt.Sprintf("live %d above MaxSize (bound %d, target %d)", st.Live, bound, target))
			} else if st.Live <= target {
				bound = target
			}
			bmu.Unlock()
			if int64(st.Created)-int64(st.Closed)-int64(st.Detached) != int64(st.Live-st.Connecting) {
				violate(fmt.Sprintf("snapshot does not add up: %+v", st))
			}
			now := time.Now().UnixNano()
			for i := range inAcquire {
				if d := inAcquire[i].Load(); d != 0 && now > d+int64(time.Second) {
					violate("stranded waiter")
				}
			}
		}
	}()
	time.Sleep(dur)
	close(stop)
	wg.Wait()
	<-monitorDone

	t.Logf("stress %v: %+v", dur, p.Stats())

	// Quiescence: Close returns once every connect in flight (bounded by
	// ConnectTimeout) and every close has ended, with nothing live; then the
	// pool's counts and the manager's agree.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Close(ctx))
	st := p.Stats()
	require.Equal(t, 0, st.Live)
	require.Equal(t, uint64(created.Load()), st.Created)
	require.Equal(t, uint64(detached.Load()), st.Detached)
	require.Equal(t, st.Created, st.Closed+st.Detached, "created == closed + detached + live: %+v", st)
	require.Equal(t, created.Load(), closed.Load()+detached.Load(), "every object closed or detached")
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d violations; first: %s", v, *firstViolation.Load())
	}
}

// stressMgr injects faults.
type stressMgr struct {
	created, closed *atomic.Int64
	violate         func(string)
}

func (m *stressMgr) Connect(ctx context.Context) (*obj, error) {
	switch n := rand.IntN(100); {
	case n < 10:
		return nil, errFake
	case n < 13: // hang until the pool's context (ConnectTimeout) ends
		<-ctx.Done()
		return nil, ctx.Err()
	case n < 30:
		select {
		case <-time.After(time.Duration(rand.IntN(2000)) * time.Microsecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &obj{id: m.created.Add(1)}, nil
}

func (m *stressMgr) Recycle(ctx context.Context, o *obj, _ manager.Metrics) error {
	if o.inUse.Load() {
		m.violate("recycle of an object in use")
	}
	if o.closed.Load() {
		m.violate("recycle of a closed object")
	}
	if rand.IntN(20) == 0 {
		return errFake
	}
	return nil
}

func (m *stressMgr) Close(o *obj) error {
	if o.closed.Swap(true) {
		m.violate("object closed twice")
	}
	if o.inUse.Load() {
		m.violate("object closed while in use")
	}
	m.closed.Add(1)
	return nil
}

// TestStressCloseWhileBusy closes the pool under load: workers keep
// acquiring until they get ErrClosed; Close returns nil once every lease is
// back, every connect has ended and every object is closed or detached.
func TestStressCloseWhileBusy(t *testing.T) {
	dur := stressDuration(t) / 2
	var created, closed atomic.Int64
	var violations atomic.Int64
	m := &stressMgr{created: &created, closed: &closed, violate: func(string) { violations.Add(1) }}
	p, err := pool.New[*obj](m, pool.Config{MaxSize: 8, MinIdle: 4, ConnectTimeout: 20 * time.Millisecond, MaxIdleTime: 10 * time.Millisecond})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(i), 9))
			for {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.IntN(5000))*time.Microsecond)
				l, err := p.Acquire(ctx)
				cancel()
				if errors.Is(err, pool.ErrClosed) {
					return
				}
				if err != nil {
					continue
				}
				if !l.Value().inUse.CompareAndSwap(false, true) {
					violations.Add(1)
				}
				time.Sleep(time.Duration(r.IntN(100)) * time.Microsecond)
				l.Value().inUse.Store(false)
				if r.IntN(30) == 0 {
					l.Destroy()
				} else {
					l.Release()
				}
			}
		})
	}
	time.Sleep(dur)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Close(ctx))
	wg.Wait()
	require.Equal(t, 0, p.Stats().Live)
	require.Equal(t, created.Load(), closed.Load())
	require.Zero(t, violations.Load())
}
