package pool_test

import (
	"context"
	"errors"
	"github.com/poolkit/poolkit/exchange"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/internal/testutil/ptest"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

func TestConfigValidationNamesTheField(t *testing.T) {
	cases := []struct {
		cfg   pool.Config
		field string
	}{
		{pool.Config{}, "Config.MaxSize must be >= 1, got 0"},
		{pool.Config{MaxSize: 2, MinIdle: 3}, "Config.MinIdle"},
		{pool.Config{MaxSize: 1, MinIdle: -1}, "Config.MinIdle"},
		{pool.Config{MaxSize: 1, MaxLifetime: -1}, "Config.MaxLifetime"},
		{pool.Config{MaxSize: 1, MaxLifetime: time.Second, LifetimeJitter: 2 * time.Second}, "Config.LifetimeJitter"},
		{pool.Config{MaxSize: 1, MaxIdleTime: -1}, "Config.MaxIdleTime"},
		{pool.Config{MaxSize: 1, MaxUses: -1}, "Config.MaxUses"},
		{pool.Config{MaxSize: 1, AcquireTimeout: -1}, "Config.AcquireTimeout"},
		{pool.Config{MaxSize: 1, ConnectTimeout: -1}, "Config.ConnectTimeout"},
		{pool.Config{MaxSize: 1, MaxConnecting: -1}, "Config.MaxConnecting"},
		{pool.Config{MaxSize: 1, Exchange: 7}, "Config.Exchange"},
		{pool.Config{MaxSize: 1 << 20, Exchange: exchange.KindNone}, "Config.Exchange is exchange.KindNone"},
	}
	for _, c := range cases {
		_, err := pool.New[*obj](&fakeMgr{}, c.cfg)
		require.Error(t, err, "%+v", c.cfg)
		require.ErrorIs(t, err, pool.ErrInvalidConfig)
		require.Contains(t, err.Error(), "pool: "+c.field)
	}
	_, err := pool.New[*obj](nil, pool.Config{MaxSize: 1})
	require.ErrorIs(t, err, pool.ErrInvalidConfig)
}

func TestDefaults(t *testing.T) {
	p := newPool(t, &fakeMgr{}, pool.Config{MaxSize: 2})
	require.Equal(t, 2, p.LocalDepth(), "LocalDepth defaults to min(4, MaxSize)")
	require.GreaterOrEqual(t, p.ExchangeCap(), 3, "the exchange holds MaxSize and one free slot")
	require.Equal(t, 100*time.Millisecond, pool.TickFor(pool.Config{}))
	require.Equal(t, time.Millisecond, pool.TickFor(pool.Config{MaxIdleTime: time.Millisecond}))
	require.Equal(t, 50*time.Millisecond, pool.TickFor(pool.Config{MaxIdleTime: time.Hour, MaxLifetime: 400 * time.Millisecond}))
	require.Equal(t, 100*time.Millisecond, pool.TickFor(pool.Config{MaxIdleTime: time.Hour}), "at most 100 ms: the resolution of Metrics.LastUsed")
	require.Equal(t, 20*time.Millisecond, pool.TickFor(pool.Config{MaxIdleTime: time.Hour, HealthCheckPeriod: 160 * time.Millisecond}), "HealthCheckPeriod bounds the tick")
	require.Equal(t, 10*time.Millisecond, pool.TickFor(pool.Config{HealthCheckPeriod: time.Second, LeakThreshold: 80 * time.Millisecond}), "LeakThreshold bounds the tick")
}

// The local stack first, LIFO; a connect only when nothing is idle.
func TestAcquireReusesIdleLIFO(t *testing.T) { run(t, testAcquireReusesIdleLIFO) }

func testAcquireReusesIdleLIFO(t *testing.T, mode testMode) {
	ptest.OneP(t) // every Push and Pop hit the same per-P stack
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 4})
	a, b := acquire(t, p), acquire(t, p)
	require.NotEqual(t, a.Value().id, b.Value().id)
	a.Release()
	b.Release()
	c := acquire(t, p)
	require.Equal(t, int64(2), c.Value().id, "the most recently released object comes first")
	c.Release()
	require.Equal(t, int64(2), f.nextID.Load(), "no new connect while idle objects exist")
	st := p.Stats()
	require.Equal(t, 2, st.Live)
	require.Equal(t, 2, st.Idle)
	require.Equal(t, 0, st.Leased)
	require.Equal(t, uint64(3), st.Acquires)
	require.Equal(t, uint64(1), p.PathStats().LocalHits)
}

// MaxSize bounds live objects exactly, connects included (DESIGN.md invariant 1).
func TestMaxSizeIsExact(t *testing.T) { run(t, testMaxSizeIsExact) }

func testMaxSizeIsExact(t *testing.T, mode testMode) {
	var inFlight, peak atomic.Int64
	f := &fakeMgr{connect: func(ctx context.Context) error {
		n := inFlight.Add(1)
		for {
			m := peak.Load()
			if n <= m || peak.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		inFlight.Add(-1)
		return nil
	}}
	p := mode.newPool(t, f, pool.Config{MaxSize: 3, MaxConnecting: 3})
	var wg sync.WaitGroup
	var maxLive atomic.Int64
	for range 16 {
		wg.Go(func() {
			for range 20 {
				l := acquire(t, p)
				if n := int64(p.Stats().Live); n > maxLive.Load() {
					maxLive.Store(n)
				}
				l.Release()
			}
		})
	}
	wg.Wait()
	require.LessOrEqual(t, maxLive.Load(), int64(3))
	require.LessOrEqual(t, f.nextID.Load(), int64(3))
	require.LessOrEqual(t, peak.Load(), int64(3))
}

// With a waiter queued, a newcomer queues behind it, and
// waiters are served in arrival order (DESIGN.md invariant 6).
func TestWaitersAreFIFOAndNewcomersDoNotBarge(t *testing.T) {
	run(t, testWaitersAreFIFOAndNewcomersDoNotBarge)
}

func testWaitersAreFIFOAndNewcomersDoNotBarge(t *testing.T, mode testMode) {
	p := mode.newPool(t, &fakeMgr{}, pool.Config{MaxSize: 1})
	held := acquire(t, p)
	const n = 5
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			l := acquire(t, p)
			order <- i
			l.Release()
		})
		require.Equal(t, i+1, settle(t, p).Waiting)
	}
	// A newcomer does not barge: TryAcquire fails while others wait.
	_, err := p.TryAcquire(context.Background())
	require.ErrorIs(t, err, pool.ErrExhausted)
	held.Release()
	wg.Wait()
	close(order)
	want := 0
	for got := range order {
		require.Equal(t, want, got)
		want++
	}
	require.Equal(t, uint64(n), p.PathStats().HandOffs)
}

// Expiry checks on every path: uses, lifetime, idle time, Reset (DESIGN.md invariant 3).
func TestExpiryChecks(t *testing.T) {
	runSub(t, "MaxUses", func(t *testing.T, mode testMode) {
		f := &fakeMgr{}
		p := mode.newPool(t, f, pool.Config{MaxSize: 1, MaxUses: 2})
		for range 3 {
			acquire(t, p).Release()
		}
		require.Equal(t, int64(2), f.nextID.Load())
		require.Equal(t, uint64(1), p.Stats().ClosedBy[pool.CloseUses])
	})
	runSub(t, "MaxLifetime", func(t *testing.T, mode testMode) {
		f := &fakeMgr{}
		p := mode.newPool(t, f, pool.Config{MaxSize: 1, MaxLifetime: time.Hour, LifetimeJitter: time.Minute})
		l := acquire(t, p)
		l.Release()
		time.Sleep(59 * time.Minute)
		l = acquire(t, p)
		require.Equal(t, int64(1), l.Value().id, "jitter < 1 minute: still alive at 59m")
		time.Sleep(2 * time.Minute)
		l.Release() // checked at release: closed
		require.Equal(t, uint64(1), settle(t, p).ClosedBy[pool.CloseLifetime])
		l = acquire(t, p)
		require.Equal(t, int64(2), l.Value().id)
		l.Release()
	})
	runSub(t, "MaxIdleTime", func(t *testing.T, mode testMode) {
		// MinIdle keeps the first object from the maintainer's idle
		// closing, so that an Acquire finds it idle for two hours.
		f := &fakeMgr{}
		p := mode.newPool(t, f, pool.Config{MaxSize: 2, MinIdle: 1, MaxIdleTime: time.Hour})
		require.Equal(t, 1, settle(t, p).Idle, "MinIdle's connect")
		time.Sleep(2 * time.Hour)
		l := acquire(t, p) // an object in hand is used (after Recycle), not closed and replaced
		require.Equal(t, int64(1), l.Value().id)
		m := acquire(t, p)
		l.Release()
		m.Release()
		time.Sleep(2 * time.Hour) // two idle for two hours: the maintainer closes the one above MinIdle
		s := settle(t, p)
		require.Equal(t, uint64(1), s.ClosedBy[pool.CloseIdle])
		require.Equal(t, 1, s.Idle)
	})
	runSub(t, "Reset", func(t *testing.T, mode testMode) {
		f := &fakeMgr{}
		p := mode.newPool(t, f, pool.Config{MaxSize: 2})
		a := acquire(t, p)
		acquire(t, p).Release()
		p.Reset()
		a.Release() // closed at release
		l := acquire(t, p)
		require.Equal(t, int64(3), l.Value().id, "the idle one was closed at acquire (or by the maintainer)")
		l.Release()
		require.Equal(t, uint64(2), settle(t, p).ClosedBy[pool.CloseReset])
	})
}

// Recycle runs on used objects only, with metrics; a failure closes
// the object and the search goes on (DESIGN.md invariant 3).
func TestRecycle(t *testing.T) { run(t, testRecycle) }

func testRecycle(t *testing.T, mode testMode) {
	var fail atomic.Bool
	var got manager.Metrics
	f := &fakeMgr{recycle: func(ctx context.Context, o *obj, m manager.Metrics) error {
		got = m
		if fail.Load() {
			return errFake
		}
		return nil
	}}
	p := mode.newPool(t, f, pool.Config{MaxSize: 2})
	acquire(t, p).Release()
	require.Equal(t, int64(0), f.recycles.Load(), "a fresh object is not recycled")
	acquire(t, p).Release()
	require.Equal(t, int64(1), f.recycles.Load())
	require.Equal(t, uint64(1), got.Uses)
	require.False(t, got.Created.IsZero())
	require.False(t, got.LastUsed.Before(got.Created.Add(-time.Second)))
	fail.Store(true)
	l := acquire(t, p)
	require.Equal(t, int64(2), l.Value().id, "a failed recycle closes the object and Acquire connects")
	fail.Store(false)
	l.Release()
	require.Equal(t, uint64(1), settle(t, p).ClosedBy[pool.CloseRecycle])
}

// On a hand-off the waiter recycles under its own context; on failure it
// keeps its place at the head and gets a connect in the freed slot
// (DESIGN.md invariant 3).
func TestHandOffRecycleFailureKeepsHeadOfQueue(t *testing.T) {
	run(t, testHandOffRecycleFailureKeepsHeadOfQueue)
}

func testHandOffRecycleFailureKeepsHeadOfQueue(t *testing.T, mode testMode) {
	type key struct{}
	var sawWaiterCtx atomic.Bool
	f := &fakeMgr{recycle: func(ctx context.Context, o *obj, m manager.Metrics) error {
		if ctx.Value(key{}) == "first" {
			sawWaiterCtx.Store(true)
			return errFake
		}
		return nil
	}}
	p := mode.newPool(t, f, pool.Config{MaxSize: 1})
	held := acquire(t, p)
	first := make(chan int64, 1)
	go func() {
		ctx := context.WithValue(context.Background(), key{}, "first")
		l, err := p.Acquire(ctx)
		if err == nil {
			first <- l.Value().id
			l.Release()
		}
	}()
	require.Equal(t, 1, settle(t, p).Waiting)
	second := make(chan int64, 1)
	go func() {
		l, err := p.Acquire(context.Background())
		if err == nil {
			second <- l.Value().id
			l.Release()
		}
	}()
	require.Equal(t, 2, settle(t, p).Waiting)
	held.Release()
	require.Equal(t, int64(2), <-first, "the first waiter got the new object")
	require.True(t, sawWaiterCtx.Load())
	require.Equal(t, int64(2), <-second)
}

// Destroy and Detach free the slot for the oldest waiter (DESIGN.md invariant 5).
func TestDestroyAndDetachWakeWaiter(t *testing.T) {
	for _, name := range []string{"Destroy", "Detach"} {
		runSub(t, name, func(t *testing.T, mode testMode) {
			f := &fakeMgr{}
			p := mode.newPool(t, f, pool.Config{MaxSize: 1})
			held := acquire(t, p)
			done := make(chan int64)
			go func() {
				l, err := p.Acquire(context.Background())
				if err == nil {
					done <- l.Value().id
					l.Release()
				}
			}()
			require.Equal(t, 1, settle(t, p).Waiting)
			if name == "Destroy" {
				held.Destroy()
			} else {
				o := held.Detach()
				require.Equal(t, int64(1), o.id)
				_ = o // the caller owns it now (and would close it)
			}
			require.Equal(t, int64(2), <-done)
		})
	}
}

// A waiter whose context ends leaves the queue; nothing is lost (DESIGN.md invariant 5).
func TestWaiterCancelLeavesQueue(t *testing.T) { run(t, testWaiterCancelLeavesQueue) }

func testWaiterCancelLeavesQueue(t *testing.T, mode testMode) {
	p := mode.newPool(t, &fakeMgr{}, pool.Config{MaxSize: 1})
	held := acquire(t, p)
	cause := errors.New("the caller went away")
	ctx, cancel := context.WithCancelCause(context.Background())
	errc := make(chan error)
	go func() {
		_, err := p.Acquire(ctx)
		errc <- err
	}()
	require.Equal(t, 1, settle(t, p).Waiting)
	cancel(cause)
	err := <-errc
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, cause)
	require.NotErrorIs(t, err, pool.ErrTimeout)
	require.Equal(t, cause, context.Cause(ctx))
	require.Equal(t, 0, p.Stats().Waiting)
	held.Release()
	l := acquire(t, p)
	require.Equal(t, int64(1), l.Value().id)
	l.Release()
	require.Equal(t, uint64(1), p.Stats().Cancels)
}

// A hand-off racing with a waiter's cancellation loses nothing (DESIGN.md invariant 5).
func TestHandOffRacingCancelLosesNothing(t *testing.T) { run(t, testHandOffRacingCancelLosesNothing) }

func testHandOffRacingCancelLosesNothing(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 2})
	for range 300 {
		a, b := acquire(t, p), acquire(t, p)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			l, err := p.Acquire(ctx)
			if err == nil {
				l.Release()
			}
			errc <- err
		}()
		require.Equal(t, 1, settle(t, p).Waiting)
		go cancel()
		a.Release()
		<-errc
		b.Release()
		require.Equal(t, 2, p.Stats().Live)
		cancel()
	}
	require.Equal(t, int64(2), f.nextID.Load(), "no object lost or replaced")
}

// Deadlines match ErrTimeout and DeadlineExceeded; the cause is kept.
func TestTimeouts(t *testing.T) { run(t, testTimeouts) }

func testTimeouts(t *testing.T, mode testMode) {
	p := mode.newPool(t, &fakeMgr{}, pool.Config{MaxSize: 1})
	held := acquire(t, p)
	defer held.Release()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := p.Acquire(ctx)
	require.ErrorIs(t, err, pool.ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "(live=1 idle=0 leased=1 waiting=0)", "a timeout carries the pool's state")

	cause := errors.New("slow caller")
	ctx2, cancel2 := context.WithTimeoutCause(context.Background(), 10*time.Millisecond, cause)
	defer cancel2()
	_, err = p.Acquire(ctx2)
	require.ErrorIs(t, err, pool.ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, cause)
	require.Contains(t, err.Error(), "slow caller")

	p2 := mode.newPool(t, &fakeMgr{}, pool.Config{MaxSize: 1, AcquireTimeout: 10 * time.Millisecond})
	h2 := acquire(t, p2)
	defer h2.Release()
	start := time.Now()
	_, err = p2.Acquire(context.Background())
	require.ErrorIs(t, err, pool.ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, 10*time.Millisecond, time.Since(start), "the bubble's clock: exactly AcquireTimeout")
	require.Equal(t, uint64(1), p2.Stats().Timeouts)
}

// A connect outlives the acquirer that gave up; its object joins
// the pool.
func TestConnectOutlivesAbandonedAcquire(t *testing.T) { run(t, testConnectOutlivesAbandonedAcquire) }

func testConnectOutlivesAbandonedAcquire(t *testing.T, mode testMode) {
	release := make(chan struct{})
	var sawCancel atomic.Bool
	f := &fakeMgr{connect: func(ctx context.Context) error {
		select {
		case <-release:
		case <-ctx.Done():
			sawCancel.Store(true)
			return ctx.Err()
		}
		return nil
	}}
	p := mode.newPool(t, f, pool.Config{MaxSize: 1})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := p.Acquire(ctx)
		errc <- err
	}()
	require.Equal(t, 1, settle(t, p).Connecting)
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	close(release)
	require.Equal(t, 1, settle(t, p).Idle)
	require.False(t, sawCancel.Load())
	l := acquire(t, p)
	require.Equal(t, int64(1), l.Value().id)
	l.Release()
}

// A connect error goes to its acquirer, wrapped; the slot is freed.
func TestConnectErrorIsWrappedAndFreesSlot(t *testing.T) {
	run(t, testConnectErrorIsWrappedAndFreesSlot)
}

func testConnectErrorIsWrappedAndFreesSlot(t *testing.T, mode testMode) {
	var fail atomic.Bool
	fail.Store(true)
	f := &fakeMgr{connect: func(ctx context.Context) error {
		if fail.Load() {
			return errFake
		}
		return nil
	}}
	p := mode.newPool(t, f, pool.Config{MaxSize: 1})
	_, err := p.Acquire(context.Background())
	require.ErrorIs(t, err, errFake)
	require.Contains(t, err.Error(), "pool: connect")
	requireLive(t, p, 0)
	fail.Store(false)
	acquire(t, p).Release()
	st := p.Stats()
	require.Equal(t, uint64(2), st.Connects)
	require.Equal(t, uint64(1), st.ConnectErrors)
}

// Concurrent connects are bounded by MaxConnecting.
func TestMaxConnecting(t *testing.T) { run(t, testMaxConnecting) }

func testMaxConnecting(t *testing.T, mode testMode) {
	var inFlight, peak atomic.Int64
	gate := make(chan struct{})
	f := &fakeMgr{connect: func(ctx context.Context) error {
		n := inFlight.Add(1)
		for m := peak.Load(); n > m && !peak.CompareAndSwap(m, n); m = peak.Load() {
		}
		<-gate
		inFlight.Add(-1)
		return nil
	}}
	p := mode.newPool(t, f, pool.Config{MaxSize: 8, MaxConnecting: 2})
	var wg sync.WaitGroup
	leases := make(chan pool.Lease[*obj], 8)
	for range 8 {
		wg.Go(func() { leases <- acquire(t, p) })
	}
	// Once everything has settled, all eight count as connecting, two of
	// them inside the manager; peak, checked below, catches a third.
	require.Equal(t, 8, settle(t, p).Connecting)
	require.Equal(t, int64(2), inFlight.Load())
	close(gate)
	wg.Wait()
	close(leases)
	for l := range leases {
		l.Release()
	}
	require.Equal(t, int64(2), peak.Load(), "never more connects at once than MaxConnecting")
}

// TryAcquire never waits and starts a connect so that a retry succeeds.
func TestTryAcquire(t *testing.T) { run(t, testTryAcquire) }

func testTryAcquire(t *testing.T, mode testMode) {
	p := mode.newPool(t, &fakeMgr{}, pool.Config{MaxSize: 1})
	_, err := p.TryAcquire(context.Background())
	require.ErrorIs(t, err, pool.ErrExhausted)
	require.Equal(t, 1, settle(t, p).Idle)
	l, err := p.TryAcquire(context.Background())
	require.NoError(t, err)
	_, err = p.TryAcquire(context.Background())
	require.ErrorIs(t, err, pool.ErrExhausted, "at MaxSize")
	l.Release()
}

// releaseCheckMgr refuses objects released "mid-transaction".
type releaseCheckMgr struct {
	fakeMgr
	inTx atomic.Bool
}

func (m *releaseCheckMgr) CheckRelease(o *obj) error {
	if m.inTx.Load() {
		return errFake
	}
	return nil
}

// countingReleaseMgr counts its release checks and refuses none.
type countingReleaseMgr struct {
	fakeMgr
	checks atomic.Int64
}

func (m *countingReleaseMgr) CheckRelease(*obj) error {
	m.checks.Add(1)
	return nil
}

// A released object that fails the expiry checks (lifetime, uses, Reset)
// is closed without the manager's release check, as pgxpool closes a
// connection past its lifetime without asking AfterRelease.
func TestReleaseCheckSkipsExpiredObjects(t *testing.T) { run(t, testReleaseCheckSkipsExpiredObjects) }

func testReleaseCheckSkipsExpiredObjects(t *testing.T, mode testMode) {
	m := &countingReleaseMgr{}
	p := mode.newPool(t, m, pool.Config{MaxSize: 1, MaxLifetime: time.Hour, MaxUses: 3})
	acquire(t, p).Release()
	require.EqualValues(t, 1, m.checks.Load(), "a live object is checked")

	l := acquire(t, p)
	time.Sleep(2 * time.Hour)
	l.Release()
	s := settle(t, p)
	require.EqualValues(t, 1, s.ClosedBy[pool.CloseLifetime])
	require.EqualValues(t, 1, m.checks.Load(), "an object past its lifetime was checked")

	for range 3 { // the second object's uses
		acquire(t, p).Release()
	}
	require.EqualValues(t, 1, settle(t, p).ClosedBy[pool.CloseUses])
	require.EqualValues(t, 3, m.checks.Load(), "an object with its uses spent was checked")

	l = acquire(t, p)
	p.Reset()
	l.Release()
	require.EqualValues(t, 1, settle(t, p).ClosedBy[pool.CloseReset])
	require.EqualValues(t, 3, m.checks.Load(), "an object from before a Reset was checked")
	require.Zero(t, p.Stats().ClosedBy[pool.CloseReleaseCheck])
}

// The release-time check; Release after Close; Close off the
// caller's goroutine.
func TestReleaseCheckAndReleaseAfterClose(t *testing.T) { run(t, testReleaseCheckAndReleaseAfterClose) }

func testReleaseCheckAndReleaseAfterClose(t *testing.T, mode testMode) {
	m := &releaseCheckMgr{}
	block := make(chan struct{})
	var blocking atomic.Bool
	m.close = func(o *obj) { // Manager.Close may block: Release must not
		if blocking.Load() {
			<-block
		}
	}
	p, err := pool.New[*obj](m, mode.config(pool.Config{MaxSize: 2}))
	require.NoError(t, err)
	m.inTx.Store(true)
	acquire(t, p).Release()
	require.Equal(t, uint64(1), settle(t, p).ClosedBy[pool.CloseReleaseCheck])
	m.inTx.Store(false)

	blocking.Store(true)
	l := acquire(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, p.Close(ctx), context.DeadlineExceeded, "a lease is still out")
	l.Release() // after Close: closed, on a closer goroutine
	close(block)
	require.NoError(t, p.Close(context.Background()))
	require.Equal(t, m.nextID.Load(), m.closes.Load())
	m.check(t)
}

func TestMaintainerReapsExpiredIdle(t *testing.T) { run(t, testMaintainerReapsExpiredIdle) }

func testMaintainerReapsExpiredIdle(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 8, MaxLifetime: time.Hour})
	var ls []pool.Lease[*obj]
	for range 8 {
		ls = append(ls, acquire(t, p))
	}
	for _, l := range ls {
		l.Release()
	}
	time.Sleep(2 * time.Hour) // the maintainer's reaping passes close them
	require.Equal(t, 0, settle(t, p).Live)
	require.Equal(t, uint64(8), p.Stats().ClosedBy[pool.CloseLifetime])
}

func TestMinIdleIsKeptWarm(t *testing.T) { run(t, testMinIdleIsKeptWarm) }

func testMinIdleIsKeptWarm(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 4, MinIdle: 2})
	require.Equal(t, 2, settle(t, p).Idle)
}

// Close wakes waiters with ErrClosed, refuses new acquires, cancels
// connects in flight, and is idempotent (DESIGN.md invariants 5, 7).
func TestClose(t *testing.T) { run(t, testClose) }

func testClose(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p, err := pool.New[*obj](f, mode.config(pool.Config{MaxSize: 1}))
	require.NoError(t, err)
	held := acquire(t, p)
	errc := make(chan error)
	go func() {
		_, err := p.Acquire(context.Background())
		errc <- err
	}()
	require.Equal(t, 1, settle(t, p).Waiting)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, p.Close(ctx), context.DeadlineExceeded)
	require.ErrorIs(t, <-errc, pool.ErrClosed)
	_, err = p.Acquire(context.Background())
	require.ErrorIs(t, err, pool.ErrClosed)
	_, err = p.TryAcquire(context.Background())
	require.ErrorIs(t, err, pool.ErrClosed)
	held.Release()
	require.NoError(t, p.Close(context.Background()))
	require.NoError(t, p.Close(context.Background()), "idempotent")
	requireLive(t, p, 0)

	// A connect in flight is cancelled.
	f2 := &fakeMgr{connect: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}
	p2, err := pool.New[*obj](f2, mode.config(pool.Config{MaxSize: 1}))
	require.NoError(t, err)
	go func() {
		_, err := p2.Acquire(context.Background())
		errc <- err
	}()
	require.Equal(t, 1, settle(t, p2).Connecting)
	require.NoError(t, p2.Close(context.Background()))
	require.ErrorIs(t, <-errc, pool.ErrClosed, "an acquire cut short by Close says so")
}

// SetMaxSize grows (waking waiters) and shrinks (closing surplus) (DESIGN.md invariant 1).
func TestSetMaxSize(t *testing.T) { run(t, testSetMaxSize) }

func testSetMaxSize(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 1})
	held := acquire(t, p)
	got := make(chan pool.Lease[*obj])
	go func() { got <- acquire(t, p) }()
	require.Equal(t, 1, settle(t, p).Waiting)
	p.SetMaxSize(64)
	require.GreaterOrEqual(t, p.ExchangeCap(), 65, "the exchange grows with MaxSize")
	second := <-got
	require.Equal(t, 2, p.Stats().Live)
	p.SetMaxSize(1)
	held.Release()
	requireLive(t, p, 1, "the surplus closes as it comes back")
	second.Release()
	requireLive(t, p, 1)
	require.Equal(t, uint64(1), p.Stats().ClosedBy[pool.CloseShrink])
	require.Panics(t, func() { p.SetMaxSize(0) })
}

// The counters add up (DESIGN.md invariant 4).
func TestStatsCounters(t *testing.T) { run(t, testStatsCounters) }

func testStatsCounters(t *testing.T, mode testMode) {
	p := mode.newPool(t, &fakeMgr{}, pool.Config{MaxSize: 2})
	a := acquire(t, p)
	b := acquire(t, p)
	a.Destroy()
	b.Release()
	acquire(t, p).Release()
	// The destroyed object keeps its slot until Manager.Close has returned on
	// a closer goroutine: conservation holds once nothing is closing.
	require.Equal(t, 0, settle(t, p).Closing)
	st := p.Stats()
	require.Equal(t, uint64(3), st.Acquires)
	require.Equal(t, uint64(2), st.Created)
	require.Equal(t, uint64(1), st.ClosedBy[pool.CloseDestroy])
	require.Equal(t, uint64(1), st.Closed)
	require.Equal(t, st.Created, st.Closed+st.Detached+uint64(st.Live))
}

// Stale leases panic reliably, even after the object went to someone else.
func TestStaleLeasePanics(t *testing.T) { run(t, testStaleLeasePanics) }

func testStaleLeasePanics(t *testing.T, mode testMode) {
	p := mode.newPool(t, &fakeMgr{}, pool.Config{MaxSize: 1})
	l := acquire(t, p)
	cp := l
	l.Release()
	const msg = "pool: lease used after Release, Destroy or Detach"
	require.PanicsWithValue(t, msg, func() { l.Release() })
	require.PanicsWithValue(t, msg, func() { l.Value() })
	require.PanicsWithValue(t, msg, func() { cp.Destroy() })
	require.PanicsWithValue(t, msg, func() { cp.Detach() })
	l2 := acquire(t, p) // the same object, now someone else's
	require.PanicsWithValue(t, msg, func() { cp.Value() })
	require.PanicsWithValue(t, msg, func() { cp.Release() })
	require.NotPanics(t, func() { l2.Value() })
	l2.Release()
	var zero pool.Lease[*obj]
	require.PanicsWithValue(t, "pool: zero Lease", func() { zero.Release() })
}

// Two copies of one lease released concurrently: one wins, the other panics,
// and the object is queued once.
func TestConcurrentDoubleReleaseQueuesOnce(t *testing.T) {
	run(t, testConcurrentDoubleReleaseQueuesOnce)
}

func testConcurrentDoubleReleaseQueuesOnce(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 1})
	for range 200 {
		l := acquire(t, p)
		var panics atomic.Int32
		var wg sync.WaitGroup
		releaseTwice(&wg, l, &panics)
		wg.Wait()
		require.Equal(t, int32(1), panics.Load())
	}
	require.LessOrEqual(t, p.Stats().Idle, 1)
}

// Idle reaping end to end with the real maintainer: a steady load of one
// goroutine on a pool that grew to 8, with a FIFO exchange, closes the
// objects the load leaves idle (the per-P stack serves the load LIFO).
func TestIdleReapingUnderSteadyLoadWithFIFOExchange(t *testing.T) {
	run(t, testIdleReapingUnderSteadyLoadWithFIFOExchange)
}

func testIdleReapingUnderSteadyLoadWithFIFOExchange(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.WithLocalDepth(pool.Config{MaxSize: 8, Exchange: exchange.KindMutex, MaxIdleTime: 20 * time.Millisecond}, 1))
	var ls []pool.Lease[*obj]
	for range 8 {
		ls = append(ls, acquire(t, p))
	}
	for _, l := range ls {
		l.Release()
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			l, err := p.Acquire(context.Background())
			if err == nil {
				time.Sleep(100 * time.Microsecond)
				l.Release()
			}
		}
	}()
	time.Sleep(time.Second)
	require.LessOrEqual(t, settle(t, p).Live, 2)
	close(stop)
	<-done
	require.Positive(t, p.Stats().ClosedBy[pool.CloseIdle])
}

// A connect made for a waiter (in a slot freed by Destroy) fails:
// the error goes to that waiter, and the slot to the next one.
func TestConnectErrorGoesToItsWaiterAndSlotToTheNext(t *testing.T) {
	run(t, testConnectErrorGoesToItsWaiterAndSlotToTheNext)
}

func testConnectErrorGoesToItsWaiterAndSlotToTheNext(t *testing.T, mode testMode) {
	var calls atomic.Int32
	f := &fakeMgr{connect: func(ctx context.Context) error {
		if calls.Add(1) == 2 {
			return errFake // the first connect made on a waiter's behalf
		}
		return nil
	}}
	p := mode.newPool(t, f, pool.Config{MaxSize: 1})
	held := acquire(t, p)
	first, second := make(chan error, 1), make(chan error, 1)
	for i, ch := range []chan error{first, second} {
		go func() {
			l, err := p.Acquire(context.Background())
			if err == nil {
				l.Release()
			}
			ch <- err
		}()
		n := i + 1
		require.Equal(t, n, settle(t, p).Waiting)
	}
	held.Destroy()
	err := <-first
	require.ErrorIs(t, err, errFake)
	require.Contains(t, err.Error(), "pool: connect")
	require.NoError(t, <-second)
}
