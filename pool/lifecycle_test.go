package pool_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// The lifecycle policies under faults, cancellation and mass failure: each
// test names the behaviour it pins down (DESIGN.md, "Lifecycle policies").

// A waiter handed an object that fails Recycle goes back to the head of the
// queue and looks again: an object released while it was out of the queue
// (checking) is found at once, though the failed object's Manager.Close is
// stuck.
func TestRequeuedWaiterFindsObjectReleasedWhileItChecked(t *testing.T) {
	run(t, testRequeuedWaiterFindsObjectReleasedWhileItChecked)
}

func testRequeuedWaiterFindsObjectReleasedWhileItChecked(t *testing.T, mode testMode) {
	gate := make(chan struct{})
	var b pool.Lease[*obj]
	var badID atomic.Int64
	f := &fakeMgr{}
	f.recycle = func(ctx context.Context, o *obj, m manager.Metrics) error {
		if o.id == badID.Load() {
			b.Release() // nobody counts as waiting now: b's object goes idle
			return errFake
		}
		return nil
	}
	f.close = func(o *obj) {
		if o.id == badID.Load() {
			<-gate
		}
	}
	p := mode.newPool(t, f, pool.Config{MaxSize: 2, AcquireTimeout: 5 * time.Second})
	defer close(gate)
	a := acquire(t, p)
	b = acquire(t, p)
	badID.Store(a.Value().id)
	got := make(chan error, 1)
	var w pool.Lease[*obj]
	go func() {
		var err error
		w, err = p.Acquire(context.Background())
		got <- err
	}()
	require.Equal(t, 1, settle(t, p).Waiting)
	a.Release() // handed to the waiter, whose Recycle fails
	require.NoError(t, <-got, "the waiter takes the object released while it checked")
	require.NotEqual(t, badID.Load(), w.Value().id)
	w.Release()
}

// slowPing is a Recycle that, like a liveness ping, takes a while and gives
// up with ctx.
func slowPing(started chan<- struct{}) func(ctx context.Context, o *obj, m manager.Metrics) error {
	return func(ctx context.Context, o *obj, m manager.Metrics) error {
		if started != nil {
			started <- struct{}{}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
			return nil
		}
	}
}

// fill makes n objects and leaves them idle.
func fill(t *testing.T, p *pool.Pool[*obj], n int) {
	t.Helper()
	ls := make([]pool.Lease[*obj], n)
	for i := range ls {
		ls[i] = acquire(t, p)
	}
	for _, l := range ls {
		l.Release()
	}
}

// A check that fails because the caller's context ended leaves the object
// idle and usable: one cancelled Acquire closes no healthy object, whether
// its context ends before it starts, during Recycle on the fast path, or
// during Recycle of an object handed to it while it waited.
func TestCanceledAcquireClosesNoHealthyObject(t *testing.T) {
	runSub(t, "EndedBefore", func(t *testing.T, mode testMode) {
		f := &fakeMgr{recycle: slowPing(nil)}
		p := mode.newPool(t, f, pool.Config{MaxSize: 4})
		fill(t, p, 4)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := p.Acquire(ctx)
		require.ErrorIs(t, err, context.Canceled)
		st := settle(t, p)
		require.Zero(t, st.Closed)
		require.Equal(t, 4, st.Idle)
	})
	runSub(t, "EndsDuringRecycle", func(t *testing.T, mode testMode) {
		started := make(chan struct{}, 8)
		f := &fakeMgr{recycle: slowPing(started)}
		p := mode.newPool(t, f, pool.Config{MaxSize: 4})
		fill(t, p, 4)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		_, err := p.Acquire(ctx)
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, int64(1), f.recycles.Load(), "one object tried, not every idle one")
		st := settle(t, p)
		require.Zero(t, st.Closed)
		require.Equal(t, 4, st.Idle)
	})
	runSub(t, "WaiterDeadlineEndsDuringRecycle", func(t *testing.T, mode testMode) {
		started := make(chan struct{}, 8)
		f := &fakeMgr{}
		p := mode.newPool(t, f, pool.Config{MaxSize: 1})
		held := acquire(t, p)
		f.recycle = slowPing(started)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		got := make(chan error, 1)
		go func() {
			_, err := p.Acquire(ctx)
			got <- err
		}()
		require.Equal(t, 1, settle(t, p).Waiting)
		held.Release() // handed to the waiter, which pings it
		<-started
		cancel()
		require.ErrorIs(t, <-got, context.Canceled)
		st := settle(t, p)
		require.Zero(t, st.Closed, "the handed object is healthy: kept")
		require.Equal(t, 1, st.Idle)
	})
}

// A Recycle error matching manager.ErrBroken closes the object even though
// the caller's context ended during the check: the manager says the object
// itself is gone (a connection its driver closed because the check was cut
// short), so it is not the caller's cancellation. On the fast path and on a
// hand-off alike.
func TestBrokenObjectIsClosedWhateverTheContext(t *testing.T) {
	broken := func(started chan<- struct{}) func(ctx context.Context, o *obj, m manager.Metrics) error {
		return func(ctx context.Context, o *obj, m manager.Metrics) error {
			started <- struct{}{}
			<-ctx.Done()
			return fmt.Errorf("ping cut short, connection closed: %w", manager.ErrBroken)
		}
	}
	runSub(t, "Idle", func(t *testing.T, mode testMode) {
		started := make(chan struct{}, 8)
		f := &fakeMgr{recycle: broken(started)}
		p := mode.newPool(t, f, pool.Config{MaxSize: 2})
		fill(t, p, 2)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-started; cancel() }()
		_, err := p.Acquire(ctx)
		require.ErrorIs(t, err, context.Canceled)
		st := settle(t, p)
		require.Equal(t, uint64(1), st.Closed, "the broken object is closed")
		require.Equal(t, 1, st.Idle)
	})
	runSub(t, "HandedOff", func(t *testing.T, mode testMode) {
		started := make(chan struct{}, 8)
		f := &fakeMgr{}
		p := mode.newPool(t, f, pool.Config{MaxSize: 1})
		held := acquire(t, p)
		f.recycle = broken(started)
		ctx, cancel := context.WithCancel(context.Background())
		got := make(chan error, 1)
		go func() {
			_, err := p.Acquire(ctx)
			got <- err
		}()
		require.Equal(t, 1, settle(t, p).Waiting)
		held.Release()
		<-started
		cancel()
		require.ErrorIs(t, <-got, context.Canceled)
		st := settle(t, p)
		require.Equal(t, uint64(1), st.Closed)
		require.Zero(t, st.Idle)
	})
}

// An Acquire whose context has already ended returns its error and hands out
// nothing: no connect, no reserved slot, on every path.
func TestAcquireOnEndedContextConnectsNothing(t *testing.T) {
	run(t, testAcquireOnEndedContextConnectsNothing)
}

func testAcquireOnEndedContextConnectsNothing(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 2})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Acquire(ctx)
	require.ErrorIs(t, err, context.Canceled)
	_, err = p.TryAcquire(ctx)
	require.ErrorIs(t, err, context.Canceled)
	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	_, err = p.Acquire(dctx)
	require.ErrorIs(t, err, pool.ErrTimeout)
	st := p.Stats()
	require.Zero(t, st.Connects)
	require.Zero(t, st.Live)
	require.Equal(t, uint64(2), st.Cancels)
	require.Equal(t, uint64(1), st.Timeouts)

	fill(t, p, 1) // an idle object: the fast path refuses it too
	_, err = p.Acquire(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 1, p.Stats().Idle)
}

// A nil context is misuse: Acquire and TryAcquire panic with a "pool:"
// message before reserving anything.
func TestNilContextPanics(t *testing.T) { run(t, testNilContextPanics) }

func testNilContextPanics(t *testing.T, mode testMode) {
	p := mode.newPool(t, &fakeMgr{}, pool.Config{MaxSize: 1})
	//lint:ignore SA1012 a nil context is the misuse under test
	require.PanicsWithValue(t, "pool: Acquire: nil Context", func() { _, _ = p.Acquire(nil) }) //nolint:staticcheck
	//lint:ignore SA1012 a nil context is the misuse under test
	require.PanicsWithValue(t, "pool: TryAcquire: nil Context", func() { _, _ = p.TryAcquire(nil) }) //nolint:staticcheck
	require.Zero(t, p.Stats().Live)
	require.Zero(t, p.Stats().Connects)
}

// When a connect's result and the end of the acquirer's context arrive
// together, the outcome is not a coin toss: the Acquire returns the context's
// error, and the new object joins the pool.
func TestConnectResultRacingContextEndReturnsContextError(t *testing.T) {
	run(t, testConnectResultRacingContextEndReturnsContextError)
}

func testConnectResultRacingContextEndReturnsContextError(t *testing.T, mode testMode) {
	for i := range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		f := &fakeMgr{connect: func(context.Context) error {
			cancel() // the acquirer's context ends as the result is ready
			return nil
		}}
		p := mode.newPool(t, f, pool.Config{MaxSize: 1})
		_, err := p.Acquire(ctx)
		require.ErrorIs(t, err, context.Canceled, "round %d", i)
		require.Equal(t, 1, settle(t, p).Idle)
		require.Zero(t, p.Stats().Closed)
	}
}

// An object in steady use is never closed for idleness: only an object that
// has itself been idle longer than MaxIdleTime is. Two goroutines use the
// pool every 20 ms with leases far shorter than the maintainer's tick.
func TestSteadyUseIsNeverClosedForIdleness(t *testing.T) {
	run(t, testSteadyUseIsNeverClosedForIdleness)
}

func testSteadyUseIsNeverClosedForIdleness(t *testing.T, mode testMode) {
	const maxIdle = 200 * time.Millisecond
	var mu sync.Mutex
	lastRelease := map[int64]time.Time{}
	var poolClosing atomic.Bool
	f := &fakeMgr{}
	f.close = func(o *obj) {
		if poolClosing.Load() {
			return
		}
		mu.Lock()
		idle := time.Since(lastRelease[o.id])
		mu.Unlock()
		if idle < maxIdle {
			f.problem("closed after only " + idle.String() + " idle")
		}
	}
	p := mode.newPool(t, f, pool.Config{MaxSize: 7, MaxIdleTime: maxIdle})
	t.Cleanup(func() { poolClosing.Store(true) }) // runs before newPool's Close
	fill(t, p, 7)
	stop := time.Now().Add(1500 * time.Millisecond)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for time.Now().Before(stop) {
				l, err := p.Acquire(context.Background())
				if err != nil {
					f.problem(err.Error())
					return
				}
				id := l.Value().id
				mu.Lock()
				lastRelease[id] = time.Now()
				mu.Unlock()
				l.Release()
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	f.check(t)
}

// An unused pool with MinIdle keeps MinIdle objects: MaxIdleTime closes idle
// objects above MinIdle only, so the maintainer makes MinIdle connects and
// then none until lifetimes end.
func TestMinIdleIsNeverReapedForIdleness(t *testing.T) { run(t, testMinIdleIsNeverReapedForIdleness) }

func testMinIdleIsNeverReapedForIdleness(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 8, MinIdle: 2, MaxIdleTime: time.Hour})
	require.Equal(t, 2, settle(t, p).Idle)
	fill(t, p, 5)             // two reused, three made: five idle
	time.Sleep(2 * time.Hour) // the maintainer's reaping passes
	st := settle(t, p)
	require.Equal(t, uint64(3), st.ClosedBy[pool.CloseIdle], "idle above MinIdle closes")
	require.Equal(t, 2, st.Live)
	time.Sleep(6 * time.Hour)
	st = settle(t, p)
	require.Equal(t, uint64(3), st.ClosedBy[pool.CloseIdle], "MinIdle objects stay, however long idle")
	require.Equal(t, uint64(5), st.Connects)
}

// After a mass failure, closes run concurrently (one per object closing): 16
// objects whose Manager.Close blocks are all being closed at once.
func TestMassFailureClosesConcurrently(t *testing.T) { run(t, testMassFailureClosesConcurrently) }

func testMassFailureClosesConcurrently(t *testing.T, mode testMode) {
	const n = 16
	var inClose atomic.Int32
	gate := make(chan struct{})
	f := &fakeMgr{close: func(*obj) { inClose.Add(1); <-gate }}
	p := mode.newPool(t, f, pool.Config{MaxSize: n})
	ls := make([]pool.Lease[*obj], n)
	for i := range ls {
		ls[i] = acquire(t, p)
	}
	for _, l := range ls {
		l.Destroy()
	}
	synctest.Wait()
	require.Equal(t, int32(n), inClose.Load(), "every close in flight at once")
	require.Equal(t, n, p.Stats().Live, "closing objects keep their slots")
	close(gate)
	requireLive(t, p, 0)
}

// Reset closes every object whose connect began before it, within a
// maintainer tick, though nothing is configured to expire and nobody
// acquires it.
func TestResetClosesObjectWhoseConnectStraddledIt(t *testing.T) {
	run(t, testResetClosesObjectWhoseConnectStraddledIt)
}

func testResetClosesObjectWhoseConnectStraddledIt(t *testing.T, mode testMode) {
	gate := make(chan struct{})
	started := make(chan struct{})
	var calls atomic.Int32
	f := &fakeMgr{connect: func(context.Context) error {
		if calls.Add(1) == 2 {
			close(started)
			<-gate
		}
		return nil
	}}
	p := mode.newPool(t, f, pool.Config{MaxSize: 2})
	witness := acquire(t, p)
	_, err := p.TryAcquire(context.Background()) // starts a background connect
	require.ErrorIs(t, err, pool.ErrExhausted)
	<-started
	witness.Release() // idle when Reset comes
	p.Reset()
	require.Equal(t, uint64(1), settle(t, p).ClosedBy[pool.CloseReset])
	close(gate)                        // Reset's own pass is over (it closed the witness): the new object comes after it
	time.Sleep(100 * time.Millisecond) // a maintainer tick
	require.Equal(t, uint64(2), settle(t, p).ClosedBy[pool.CloseReset])
	require.Zero(t, p.Stats().Live)
}

// After SetMaxSize(n) settles, live ≤ n and exactly the surplus was closed:
// concurrent releases do not close more than the surplus between them, and
// reservations racing the shrink cannot slip past it.
func TestShrinkClosesExactlyTheSurplus(t *testing.T) {
	runSub(t, "ConcurrentReleases", func(t *testing.T, mode testMode) {
		for round := range 20 {
			f := &fakeMgr{}
			p := mode.newPool(t, f, pool.Config{MaxSize: 32})
			ls := make([]pool.Lease[*obj], 32)
			for i := range ls {
				ls[i] = acquire(t, p)
			}
			p.SetMaxSize(4)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for _, l := range ls {
				wg.Go(func() { <-start; l.Release() })
			}
			close(start)
			wg.Wait()
			st := settle(t, p)
			require.Equal(t, 4, st.Live, "round %d: exactly the surplus closed: %+v", round, st)
			require.Equal(t, uint64(28), st.ClosedBy[pool.CloseShrink], "round %d", round)
		}
	})
	runSub(t, "RacingReservations", func(t *testing.T, mode testMode) {
		for round := range 50 {
			f := &fakeMgr{}
			// Acquires that end up waiting (no room after the shrink) give up.
			p := mode.newPool(t, f, pool.Config{MaxSize: 8, AcquireTimeout: 20 * time.Millisecond})
			var wg sync.WaitGroup
			leases := make(chan pool.Lease[*obj], 8)
			for range 8 {
				wg.Go(func() {
					if l, err := p.Acquire(context.Background()); err == nil {
						leases <- l
					}
				})
			}
			if round%2 == 0 {
				runtime.Gosched()
			}
			p.SetMaxSize(3) // lands among the reservations
			wg.Wait()
			close(leases)
			for l := range leases {
				l.Release()
			}
			st := settle(t, p)
			require.LessOrEqual(t, st.Live, 3, "round %d: live ≤ MaxSize once settled", round)
			require.Equal(t, min(int(st.Created), 3), st.Live, "round %d: exactly the surplus closed: %+v", round, st)
		}
	})
}

// A waiter whose connect yields an object that fails its first check keeps
// its place at the head of the queue, and its AcquireTimeout bounds the whole
// Acquire.
func TestWaiterKeepsPlaceWhenItsFreshObjectFailsItsCheck(t *testing.T) {
	run(t, testWaiterKeepsPlaceWhenItsFreshObjectFailsItsCheck)
}

func testWaiterKeepsPlaceWhenItsFreshObjectFailsItsCheck(t *testing.T, mode testMode) {
	var p *pool.Pool[*obj]
	var calls atomic.Int32
	f := &fakeMgr{connect: func(context.Context) error {
		if calls.Add(1) == 2 {
			p.Reset() // the object of this connect is stale at its first check
		}
		return nil
	}}
	p = mode.newPool(t, f, pool.Config{MaxSize: 1})
	held := acquire(t, p)
	first, second := make(chan pool.Lease[*obj], 1), make(chan pool.Lease[*obj], 1)
	go func() { first <- acquire(t, p) }()
	require.Equal(t, 1, settle(t, p).Waiting)
	go func() { second <- acquire(t, p) }()
	require.Equal(t, 2, settle(t, p).Waiting)
	held.Destroy() // the slot goes to the first waiter, whose object is stale
	var l pool.Lease[*obj]
	select {
	case l = <-first:
	case l = <-second:
		l.Release()
		t.Fatal("the second waiter was served first")
	}
	require.Equal(t, 1, p.Stats().Waiting, "the second waiter still waits")
	l.Release()
	(<-second).Release()
}

func TestAcquireTimeoutBoundsTheWholeAcquire(t *testing.T) {
	run(t, testAcquireTimeoutBoundsTheWholeAcquire)
}

func testAcquireTimeoutBoundsTheWholeAcquire(t *testing.T, mode testMode) {
	const timeout = 500 * time.Millisecond
	var p *pool.Pool[*obj]
	var calls atomic.Int32
	f := &fakeMgr{connect: func(context.Context) error {
		if calls.Add(1) == 1 {
			time.Sleep(timeout * 3 / 4)
			p.Reset() // stale at its first check: the Acquire retries
		}
		return nil
	}}
	f.close = func(*obj) { time.Sleep(time.Second) } // the retry must wait for the slot
	p = mode.newPool(t, f, pool.Config{MaxSize: 1, AcquireTimeout: timeout})
	start := time.Now()
	_, err := p.Acquire(context.Background())
	took := time.Since(start)
	require.ErrorIs(t, err, pool.ErrTimeout)
	require.Equal(t, timeout, took, "AcquireTimeout counts from the start, not from the retry (the bubble's clock: exactly)")
}

// Errors say what ended the Acquire: Close, and only Close; a connect past
// ConnectTimeout, as a timeout, counted.
func TestErrorsSayWhatEndedTheAcquire(t *testing.T) {
	runSub(t, "CloseDuringConnect", func(t *testing.T, mode testMode) {
		f := &fakeMgr{connect: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}
		p, err := pool.New[*obj](f, mode.config(pool.Config{MaxSize: 1}))
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() { _, err := p.Acquire(context.Background()); got <- err }()
		require.Equal(t, 1, settle(t, p).Connecting)
		require.NoError(t, p.Close(context.Background()))
		err = <-got
		require.ErrorIs(t, err, pool.ErrClosed)
		require.NotErrorIs(t, err, context.Canceled, "the caller cancelled nothing")
	})
	runSub(t, "CloseWhileWaiting", func(t *testing.T, mode testMode) {
		p, err := pool.New[*obj](&fakeMgr{}, mode.config(pool.Config{MaxSize: 1}))
		require.NoError(t, err)
		held := acquire(t, p)
		got := make(chan error, 1)
		go func() { _, err := p.Acquire(context.Background()); got <- err }()
		require.Equal(t, 1, settle(t, p).Waiting)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_ = p.Close(ctx)
		err = <-got
		require.ErrorIs(t, err, pool.ErrClosed)
		require.NotErrorIs(t, err, context.Canceled)
		held.Release()
		require.NoError(t, p.Close(context.Background()))
	})
	runSub(t, "ConnectTimeout", func(t *testing.T, mode testMode) {
		f := &fakeMgr{connect: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}
		p := mode.newPool(t, f, pool.Config{MaxSize: 1, ConnectTimeout: 20 * time.Millisecond})
		_, err := p.Acquire(context.Background())
		require.ErrorIs(t, err, pool.ErrTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, err.Error(), "ConnectTimeout")
		require.Equal(t, uint64(1), p.Stats().Timeouts)
	})
}

// Every Stats snapshot satisfies Created − Closed − Detached == Live −
// Connecting, under churn of connects, closes and detaches.
func TestStatsSnapshotsAreConsistent(t *testing.T) { run(t, testStatsSnapshotsAreConsistent) }

func testStatsSnapshotsAreConsistent(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 8, MaxConnecting: 8})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				l, err := p.Acquire(context.Background())
				if err != nil {
					continue
				}
				switch (g + i) % 3 {
				case 0:
					l.Destroy()
				case 1:
					_ = l.Detach()
				default:
					l.Release()
				}
			}
		})
	}
	bad := 0
	var example pool.Stats
	for range 20000 {
		st := p.Stats()
		if int64(st.Created)-int64(st.Closed)-int64(st.Detached) != int64(st.Live-st.Connecting) {
			bad++
			example = st
		}
	}
	close(stop)
	wg.Wait()
	require.Zero(t, bad, "snapshots breaking the identity, e.g. %+v", example)
}

// A panicking Recycle or CheckRelease still panics in the caller, but its
// object is closed and its slot freed: with MaxSize 1 the pool goes on, and
// Close does not hang.
func TestPanickingManagerFreesTheSlot(t *testing.T) {
	runSub(t, "Recycle", func(t *testing.T, mode testMode) {
		var boom atomic.Bool
		f := &fakeMgr{recycle: func(context.Context, *obj, manager.Metrics) error {
			if boom.Swap(false) {
				panic("recycle exploded")
			}
			return nil
		}}
		p := mode.newPool(t, f, pool.Config{MaxSize: 1, AcquireTimeout: 5 * time.Second})
		fill(t, p, 1)
		boom.Store(true)
		require.PanicsWithValue(t, "recycle exploded", func() { _, _ = p.Acquire(context.Background()) })
		l := acquire(t, p)
		require.Equal(t, int64(2), l.Value().id, "the panicked object was closed; its slot made a new one")
		l.Release()
		require.Equal(t, uint64(1), settle(t, p).ClosedBy[pool.CloseRecycle])
	})
	runSub(t, "CheckRelease", func(t *testing.T, mode testMode) {
		m := &panicRelease{fakeMgr: &fakeMgr{}}
		p := mode.newPool(t, m, pool.Config{MaxSize: 1, AcquireTimeout: 5 * time.Second})
		l := acquire(t, p)
		m.boom.Store(true)
		require.PanicsWithValue(t, "check exploded", l.Release)
		l = acquire(t, p)
		require.Equal(t, int64(2), l.Value().id)
		l.Release()
		require.Equal(t, uint64(1), settle(t, p).ClosedBy[pool.CloseReleaseCheck])
	})
}

type panicRelease struct {
	*fakeMgr
	boom atomic.Bool
}

func (m *panicRelease) CheckRelease(*obj) error {
	if m.boom.Swap(false) {
		panic("check exploded")
	}
	return nil
}

// New does the same work whatever MaxSize is: a pool of MaxInt objects costs
// what a pool of one does, and SetMaxSize to MaxInt too.
func TestNewIsConstantInMaxSize(t *testing.T) {
	alloc := func(n int) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p, err := pool.New[*obj](&fakeMgr{}, pool.Config{MaxSize: n})
		require.NoError(t, err)
		p.SetMaxSize(n)
		runtime.ReadMemStats(&after)
		require.NoError(t, p.Close(context.Background()))
		return after.TotalAlloc - before.TotalAlloc
	}
	small := alloc(1)
	huge := alloc(math.MaxInt)
	require.Less(t, huge, small+64<<10, "bytes allocated by New(MaxSize=MaxInt) vs New(1): %d vs %d", huge, small)
}

type cancelKey struct{}

// The panic guard around a Manager call ends with the call: an object given
// back after a check (a Recycle failed because the caller's context ended;
// a health check passed) may at once be under another holder's check, and
// nothing of the first caller's touches it again. Two goroutines cycle the
// one object while a third keeps acquiring with contexts its Recycle
// cancels: no object is ever closed, none is handed out closed.
func TestPanicGuardEndsWithTheCall(t *testing.T) { run(t, testPanicGuardEndsWithTheCall) }

func testPanicGuardEndsWithTheCall(t *testing.T, mode testMode) {
	f := &fakeMgr{recycle: func(ctx context.Context, o *obj, m manager.Metrics) error {
		if cancel, ok := ctx.Value(cancelKey{}).(context.CancelFunc); ok {
			cancel() // the caller gives up during the check
			return ctx.Err()
		}
		return nil
	}}
	p := mode.newPool(t, f, pool.Config{MaxSize: 1})
	fill(t, p, 1)
	const rounds = 20000
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for range rounds {
				l, err := p.TryAcquire(context.Background())
				if err != nil {
					continue
				}
				if o := l.Value(); o == nil || o.closed.Load() {
					f.problem("handed out a closed object")
				}
				l.Release()
			}
		})
	}
	wg.Go(func() {
		for range rounds {
			ctx, cancel := context.WithCancel(context.Background())
			ctx = context.WithValue(ctx, cancelKey{}, context.CancelFunc(cancel))
			if l, err := p.Acquire(ctx); err == nil {
				l.Release()
			}
			cancel()
		}
	})
	wg.Wait()
	f.check(t)
	require.Zero(t, settle(t, p).Closed, "only cancelled checks failed: nothing to close")
}

// cancellingObserver's AcquireStart hands the Acquire a context that has
// already ended.
type cancellingObserver struct{ pool.NopObserver }

func (cancellingObserver) AcquireStart(ctx context.Context) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	return ctx
}

// The context an Observer's AcquireStart returns is the Acquire's from then
// on: if it has ended, the Acquire hands out nothing, on an idle object too.
func TestAcquireOnContextEndedByObserverHandsOutNothing(t *testing.T) {
	synctest.Test(t, testAcquireOnContextEndedByObserverHandsOutNothing)
}

func testAcquireOnContextEndedByObserverHandsOutNothing(t *testing.T) {
	p := newPool(t, &fakeMgr{}, pool.Config{MaxSize: 2, MinIdle: 1, Observer: cancellingObserver{}})
	require.Equal(t, 1, settle(t, p).Idle)
	_, err := p.Acquire(context.Background())
	require.ErrorIs(t, err, context.Canceled)
	_, err = p.TryAcquire(context.Background())
	require.ErrorIs(t, err, context.Canceled)
	st := p.Stats()
	require.Equal(t, 1, st.Idle, "the idle object was not handed out")
	require.Equal(t, uint64(1), st.Connects, "MinIdle's connect, and none for the Acquires")
}

// TestUnclaimedSlotReachesAWaiterThatQueuedMeanwhile checks invariant 5 on
// the path where a dispatch reserves a slot and finds nobody to take it (the
// only waiter backs off after a failed connect), while a new waiter queues:
// that waiter's own look cannot reserve the slot, so the dispatch that gives
// it back must hand it on.
func TestUnclaimedSlotReachesAWaiterThatQueuedMeanwhile(t *testing.T) {
	run(t, testUnclaimedSlotReachesAWaiterThatQueuedMeanwhile)
}

func testUnclaimedSlotReachesAWaiterThatQueuedMeanwhile(t *testing.T, mode testMode) {
	var connects atomic.Int32
	f := &fakeMgr{connect: func(context.Context) error {
		if connects.Add(1) == 1 {
			return errFake // the first waiter backs off, taking objects only
		}
		return nil
	}}
	p := mode.newPool(t, f, pool.Config{MaxSize: 1, AcquireTimeout: time.Minute})
	retrying := make(chan pool.Lease[*obj], 1)
	go func() { retrying <- acquire(t, p) }()
	require.Equal(t, 1, settle(t, p).Waiting, "the first waiter backs off in the queue")

	newcomer := make(chan pool.Lease[*obj], 1)
	restore := pool.SetTestHookSlotUnclaimed(func() {
		go func() { newcomer <- acquire(t, p) }()
		synctest.Wait() // it queued, and its look found the slot reserved
	})
	p.SetMaxSize(1) // a dispatch: the backing-off waiter takes no slot
	restore()
	synctest.Wait()
	select {
	case l := <-newcomer:
		l.Release()
	default:
		t.Fatal("the waiter that queued while the slot was reserved was never handed it")
	}
	(<-retrying).Release()
}
