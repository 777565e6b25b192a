package pool_test

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/internal/testutil/ptest"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	pool.NopObserver // as every Observer does (see Observer)
	mu               sync.Mutex
	acquires         []pool.AcquireEvent
	connects         []pool.ConnectEvent
	closes           []pool.CloseEvent
	leaks            chan pool.LeakEvent
	starts           int
	ctxKey           any // AcquireStart adds ctxKey → "span" to the context
}

func newRecorder() *recorder {
	return &recorder{leaks: make(chan pool.LeakEvent, 16), ctxKey: spanKey{}}
}

type spanKey struct{}

func (r *recorder) AcquireStart(ctx context.Context) context.Context {
	r.mu.Lock()
	r.starts++
	r.mu.Unlock()
	return context.WithValue(ctx, r.ctxKey, "span")
}

func (r *recorder) AcquireEnd(ctx context.Context, ev pool.AcquireEvent) {
	if ctx.Value(spanKey{}) != "span" {
		panic("AcquireEnd without AcquireStart's context")
	}
	r.mu.Lock()
	r.acquires = append(r.acquires, ev)
	r.mu.Unlock()
}

func (r *recorder) ConnectEnd(_ context.Context, ev pool.ConnectEvent) {
	r.mu.Lock()
	r.connects = append(r.connects, ev)
	r.mu.Unlock()
}

func (r *recorder) Closed(_ context.Context, ev pool.CloseEvent) {
	r.mu.Lock()
	r.closes = append(r.closes, ev)
	r.mu.Unlock()
}

func (r *recorder) Leak(_ context.Context, ev pool.LeakEvent) { r.leaks <- ev }

func (r *recorder) lastAcquire() pool.AcquireEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.acquires[len(r.acquires)-1]
}

func TestProductionOptionsAreValidated(t *testing.T) {
	for _, tc := range []struct {
		cfg   pool.Config
		field string
	}{
		{pool.Config{MaxSize: 1, HealthCheckPeriod: -1}, "HealthCheckPeriod"},
		{pool.Config{MaxSize: 1, CheckTimeout: -1}, "CheckTimeout"},
		{pool.Config{MaxSize: 1, LeakThreshold: -1}, "LeakThreshold"},
		{pool.Config{MaxSize: 1, MaxIdle: -1}, "MaxIdle"},
		{pool.Config{MaxSize: 4, MinIdle: 3, MaxIdle: 2}, "MaxIdle"},
	} {
		_, err := pool.New[*obj](&fakeMgr{}, tc.cfg)
		require.ErrorIs(t, err, pool.ErrInvalidConfig)
		require.Contains(t, err.Error(), "Config."+tc.field)
	}
}

func TestMaxIdleClosesSurplusOnRelease(t *testing.T) { run(t, testMaxIdleClosesSurplusOnRelease) }

func testMaxIdleClosesSurplusOnRelease(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	p := mode.newPool(t, f, pool.Config{MaxSize: 5, MaxIdle: 2})
	var ls []pool.Lease[*obj]
	for range 5 {
		ls = append(ls, acquire(t, p))
	}
	for _, l := range ls {
		l.Release()
	}
	s := settle(t, p)
	require.Equal(t, 2, s.Idle)
	require.Equal(t, uint64(3), s.ClosedBy[pool.CloseMaxIdle])
	require.Equal(t, 2, s.Live)
	// A waiter is served before the cap is looked at.
	held := []pool.Lease[*obj]{acquire(t, p), acquire(t, p)}
	p.SetMaxSize(2)
	got := make(chan pool.Lease[*obj])
	go func() {
		l, err := p.Acquire(context.Background())
		if err == nil {
			got <- l
		}
		close(got)
	}()
	require.Equal(t, 1, settle(t, p).Waiting)
	held[0].Release()
	l, ok := <-got
	require.True(t, ok)
	l.Release()
	held[1].Release()
	require.Equal(t, uint64(3), settle(t, p).ClosedBy[pool.CloseMaxIdle])
}

// blockingRecycle blocks every Recycle until its context ends, and returns
// the context's error.
func blockingRecycle(ctx context.Context, _ *obj, _ manager.Metrics) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestCheckTimeoutClosesTheObjectButTheCallersContextDoesNot(t *testing.T) {
	run(t, testCheckTimeoutClosesTheObjectButTheCallersContextDoesNot)
}

func testCheckTimeoutClosesTheObjectButTheCallersContextDoesNot(t *testing.T, mode testMode) {
	f := &fakeMgr{recycle: blockingRecycle}
	p := mode.newPool(t, f, pool.Config{MaxSize: 2, CheckTimeout: 20 * time.Millisecond})
	acquire(t, p).Release() // used once: the next hand-out is recycled

	// The check is cut by CheckTimeout: the object is closed, and the
	// Acquire goes on to connect a new one.
	l := acquire(t, p)
	require.Equal(t, int64(2), l.Value().id)
	l.Release()
	require.Equal(t, uint64(1), settle(t, p).ClosedBy[pool.CloseRecycle])

	// The caller's deadline comes first: its error, and nothing closed.
	p2 := mode.newPool(t, &fakeMgr{recycle: blockingRecycle}, pool.Config{MaxSize: 2, CheckTimeout: time.Hour})
	acquire(t, p2).Release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := p2.Acquire(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	s := settle(t, p2)
	require.Zero(t, s.Closed)
	require.Equal(t, 1, s.Idle)
}

func TestLeaseMetricsDescribeTheLeasedObject(t *testing.T) {
	run(t, testLeaseMetricsDescribeTheLeasedObject)
}

func testLeaseMetricsDescribeTheLeasedObject(t *testing.T, mode testMode) {
	p := mode.newPool(t, &fakeMgr{}, pool.Config{MaxSize: 2})
	before := time.Now()
	l := acquire(t, p)
	m := l.Metrics()
	require.Equal(t, uint64(1), m.ID)
	require.Equal(t, uint64(1), m.Uses, "Uses counts this lease")
	require.False(t, m.Created.Before(before.Add(-time.Second)))
	l.Release()
	l = acquire(t, p)
	require.Equal(t, uint64(2), l.Metrics().Uses)
	l.Release()
	require.Panics(t, func() { l.Metrics() })
}

func TestObserverSeesEveryAcquireConnectAndClose(t *testing.T) {
	synctest.Test(t, testObserverSeesEveryAcquireConnectAndClose)
}

func testObserverSeesEveryAcquireConnectAndClose(t *testing.T) {
	ptest.OneP(t) // the local path needs the release and the Acquire on one P
	r := newRecorder()
	f := &fakeMgr{}
	caller, cancel := context.WithCancel(context.Background())
	var value any
	var errAfterCancel error
	f.connect = func(ctx context.Context) error {
		value = ctx.Value(spanKey{})
		cancel() // the Acquire gives up; the connect goes on
		errAfterCancel = ctx.Err()
		return nil
	}
	p := newPool(t, f, pool.Config{MaxSize: 1, Observer: r})
	_, err := p.Acquire(caller)
	require.ErrorIs(t, err, context.Canceled)
	require.Zero(t, r.lastAcquire().ID)
	require.ErrorIs(t, r.lastAcquire().Err, context.Canceled)
	// The connect carried the Acquire's values (AcquireStart's included),
	// not its cancellation.
	require.Equal(t, "span", value)
	require.NoError(t, errAfterCancel)
	f.connect = nil

	acquire(t, p).Destroy() // the object connected for the Acquire that gave up
	settle(t, p)
	l := acquire(t, p)
	require.Equal(t, pool.AcquireEvent{ID: 2, Wait: r.lastAcquire().Wait}, r.lastAcquire())
	l.Release()
	acquire(t, p).Release()
	require.Equal(t, pool.AcquireEvent{ID: 2, Wait: r.lastAcquire().Wait}, r.lastAcquire())

	p.DropHints()
	l = acquire(t, p)
	require.Equal(t, uint64(2), r.lastAcquire().ID)

	got := make(chan error)
	go func() {
		l, err := p.Acquire(context.Background())
		if err == nil {
			l.Destroy()
		}
		got <- err
	}()
	require.Equal(t, 1, settle(t, p).Waiting)
	l.Release()
	require.NoError(t, <-got)
	require.Equal(t, uint64(2), r.lastAcquire().ID, "handed over to the waiter")
	settle(t, p)
	r.mu.Lock()
	require.Len(t, r.connects, 2)
	require.Equal(t, uint64(1), r.connects[0].ID)
	require.Equal(t, uint64(2), r.connects[1].ID)
	require.Len(t, r.closes, 2)
	require.Equal(t, pool.CloseEvent{Reason: pool.CloseDestroy, ID: 1}, r.closes[0])
	require.Equal(t, pool.CloseEvent{Reason: pool.CloseDestroy, ID: 2}, r.closes[1])
	require.Equal(t, 6, r.starts)
	r.mu.Unlock()
}

func TestObserverSeesConnectErrors(t *testing.T) {
	r := newRecorder()
	f := &fakeMgr{connect: func(context.Context) error { return errFake }}
	p := newPool(t, f, pool.Config{MaxSize: 1, Observer: r})
	_, err := p.Acquire(context.Background())
	require.ErrorIs(t, err, errFake)
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Len(t, r.connects, 1)
	require.ErrorIs(t, r.connects[0].Err, errFake)
	require.Zero(t, r.connects[0].ID)
}

func TestWaitHistogramCountsBlockedAcquires(t *testing.T) {
	run(t, testWaitHistogramCountsBlockedAcquires)
}

func testWaitHistogramCountsBlockedAcquires(t *testing.T, mode testMode) {
	var p *pool.Pool[*obj]
	f := &fakeMgr{connect: func(context.Context) error {
		time.Sleep(100 * time.Millisecond) // on the bubble's clock
		return nil
	}}
	p = mode.newPool(t, f, pool.Config{MaxSize: 2})
	l := acquire(t, p) // connects: blocked
	l.Release()
	acquire(t, p).Release() // idle: not blocked
	s := p.Stats()
	require.Equal(t, uint64(1), s.Blocked)
	require.Equal(t, 100*time.Millisecond, s.BlockedTime)
	require.Zero(t, s.WaitBuckets[16], "nothing at or below %v", time.Microsecond<<16)
	require.Equal(t, uint64(1), s.WaitBuckets[17], "100ms is at or below %v", time.Microsecond<<17)
	require.Len(t, s.WaitBuckets, 24, "up to about 8.4s")
	require.Equal(t, uint64(1), s.WaitBuckets[len(s.WaitBuckets)-1])
	for i := 1; i < len(s.WaitBuckets); i++ {
		require.LessOrEqual(t, s.WaitBuckets[i-1], s.WaitBuckets[i], "cumulative")
	}
}

// Timeouts carry the pool's state (TestTimeouts); a cancellation does not.
func TestCancellationErrorCarriesNoState(t *testing.T) { run(t, testCancellationErrorCarriesNoState) }

func testCancellationErrorCarriesNoState(t *testing.T, mode testMode) {
	p := mode.newPool(t, &fakeMgr{}, pool.Config{MaxSize: 1})
	l := acquire(t, p)
	defer l.Release()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(5*time.Millisecond, cancel)
	_, err := p.Acquire(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NotContains(t, err.Error(), "live=")
}

// leakyAcquire takes a lease and keeps it: the leak report names it.
func leakyAcquire(t *testing.T, p *pool.Pool[*obj]) pool.Lease[*obj] {
	return acquire(t, p)
}

func TestLeakIsReportedOnceWithTheAcquiresStack(t *testing.T) {
	synctest.Test(t, testLeakIsReportedOnceWithTheAcquiresStack)
}

func testLeakIsReportedOnceWithTheAcquiresStack(t *testing.T) {
	r := newRecorder()
	p := newPool(t, &fakeMgr{}, pool.Config{MaxSize: 2, LeakThreshold: 20 * time.Millisecond, Observer: r})
	acquire(t, p).Release() // short: no report
	l := leakyAcquire(t, p)
	time.Sleep(40 * time.Millisecond) // the maintainer looks every tick (2.5 ms)
	var ev pool.LeakEvent
	select {
	case ev = <-r.leaks:
	default:
		t.Fatal("no leak report")
	}
	require.Equal(t, uint64(1), ev.ID)
	require.GreaterOrEqual(t, ev.Held, 20*time.Millisecond)
	require.Less(t, ev.Held, 20*time.Millisecond+pool.TickFor(pool.Config{LeakThreshold: 20 * time.Millisecond}), "found at the first tick at or past the threshold")
	require.True(t, strings.HasPrefix(ev.Stack, "github.com/poolkit/poolkit/pool_test.acquire\n"), ev.Stack)
	require.Contains(t, ev.Stack, "pool_test.leakyAcquire")
	p.FindLeaks()
	p.FindLeaks()
	require.Equal(t, uint64(1), p.Stats().Leaks, "reported once")
	require.Empty(t, r.leaks)
	l.Release()
}

func TestLeakDetectionWorksWithoutObserver(t *testing.T) {
	run(t, testLeakDetectionWorksWithoutObserver)
}

func testLeakDetectionWorksWithoutObserver(t *testing.T, mode testMode) {
	p := mode.newPool(t, &fakeMgr{}, pool.Config{MaxSize: 1, LeakThreshold: time.Millisecond})
	l := acquire(t, p)
	time.Sleep(10 * time.Millisecond)
	require.Equal(t, uint64(1), settle(t, p).Leaks)
	l.Release()
	// The record of an ended lease is never reported.
	l = acquire(t, p)
	l.Release()
	time.Sleep(time.Second)
	require.Equal(t, uint64(1), settle(t, p).Leaks)
}

// Warm returns once MinIdle objects exist, and again at once when they do.
// (That the connects it starts carry its context's values is checked with
// an Observer: TestObserverSeesEveryAcquireConnectAndClose.)
func TestWarmConnectsMinIdle(t *testing.T) { run(t, testWarmConnectsMinIdle) }

func testWarmConnectsMinIdle(t *testing.T, mode testMode) {
	p := mode.newPool(t, &fakeMgr{}, pool.Config{MaxSize: 8, MinIdle: 5})
	ctx := context.WithValue(context.Background(), spanKey{}, "span")
	require.NoError(t, p.Warm(ctx))
	require.GreaterOrEqual(t, p.Stats().Live, 5)
	require.NoError(t, p.Warm(ctx), "nothing to do")
}

func TestHealthCheckClosesDeadIdleObjectsAndReplacesThem(t *testing.T) {
	run(t, testHealthCheckClosesDeadIdleObjectsAndReplacesThem)
}

func testHealthCheckClosesDeadIdleObjectsAndReplacesThem(t *testing.T, mode testMode) {
	f := &fakeMgr{}
	f.recycle = func(_ context.Context, o *obj, _ manager.Metrics) error {
		if o.id <= 3 {
			return errFake // the first three "died" while idle
		}
		return nil
	}
	p := mode.newPool(t, f, pool.Config{MaxSize: 6, MinIdle: 3, HealthCheckPeriod: 10 * time.Millisecond})
	require.NoError(t, p.Warm(context.Background()))
	time.Sleep(100 * time.Millisecond) // ten periods
	s := settle(t, p)
	require.Equal(t, uint64(3), s.ClosedBy[pool.CloseHealthCheck])
	require.Equal(t, 3, s.Idle)
	var ls []pool.Lease[*obj]
	for range 3 {
		l := acquire(t, p)
		require.Greater(t, l.Value().id, int64(3), "a dead object was handed out")
		ls = append(ls, l)
	}
	for _, l := range ls {
		l.Release()
	}
	s = p.Stats()
	require.Zero(t, s.ClosedBy[pool.CloseRecycle], "the health checks, not the acquires, found them")
	require.GreaterOrEqual(t, s.HealthChecks, uint64(3))
}

func TestObjectUnderHealthCheckIsNotHandedOutAndNobodyWaitsForIt(t *testing.T) {
	run(t, testObjectUnderHealthCheckIsNotHandedOutAndNobodyWaitsForIt)
}

func testObjectUnderHealthCheckIsNotHandedOutAndNobodyWaitsForIt(t *testing.T, mode testMode) {
	inCheck := make(chan struct{}, 1)
	release := make(chan struct{})
	f := &fakeMgr{}
	f.recycle = func(ctx context.Context, o *obj, _ manager.Metrics) error {
		if ctx.Value(spanKey{}) == nil { // a health check: the pool's context
			inCheck <- struct{}{}
			<-release
		}
		return nil
	}
	p := mode.newPool(t, f, pool.Config{MaxSize: 2, HealthCheckPeriod: 5 * time.Millisecond})
	ctx := context.WithValue(context.Background(), spanKey{}, "acquirer")
	l, err := p.Acquire(ctx)
	require.NoError(t, err)
	l.Release()
	<-inCheck
	l, err = p.Acquire(ctx) // does not wait for the check: connects
	require.NoError(t, err)
	require.Equal(t, int64(2), l.Value().id)
	close(release)
	l.Release()
}

// The slog observer logs connect failures, failed acquires and leaks at
// Warn (the leak with its stack), slow acquires at Info, and nothing for a
// quick successful Acquire.
func TestSlogObserverLevels(t *testing.T) { synctest.Test(t, testSlogObserverLevels) }

func testSlogObserverLevels(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	h := slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(b)
	}), &slog.HandlerOptions{Level: slog.LevelInfo})
	var p *pool.Pool[*obj]
	fail := true
	f := &fakeMgr{connect: func(context.Context) error {
		if fail {
			return errFake
		}
		time.Sleep(time.Second) // a slow connect
		return nil
	}}
	p = newPool(t, f, pool.Config{MaxSize: 1, LeakThreshold: time.Millisecond,
		Observer: pool.NewSlogObserver(slog.New(h), 500*time.Millisecond)})
	_, err := p.Acquire(context.Background())
	require.ErrorIs(t, err, errFake)
	fail = false
	l := acquire(t, p)
	time.Sleep(10 * time.Millisecond) // the leak's line
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	l.Release()
	acquire(t, p).Release()
	mu.Lock()
	require.Equal(t, out, buf.String(), "a quick Acquire logs nothing")
	mu.Unlock()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 4, out)
	require.Contains(t, lines[0], `level=WARN msg="pool: connect failed"`)
	require.Contains(t, lines[1], `level=WARN msg="pool: acquire failed"`)
	require.Contains(t, lines[2], `level=INFO msg="pool: slow acquire"`)
	require.Contains(t, lines[2], `wait=1s id=1`)
	require.Contains(t, lines[3], `level=WARN msg="pool: lease held too long (leak?)" id=1`)
	require.Contains(t, lines[3], `pool_test.testSlogObserverLevels`)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// The stock Observer follows the rule on Observer: it embeds NopObserver, so
// that it keeps compiling, and ignores the event, when a method is added.
func TestSlogObserverEmbedsNopObserver(t *testing.T) {
	requireEmbedsNopObserver(t, pool.NewSlogObserver(nil, 0))
}

func requireEmbedsNopObserver(t *testing.T, o pool.Observer) {
	t.Helper()
	typ := reflect.TypeOf(o)
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	f, ok := typ.FieldByName("NopObserver")
	require.True(t, ok && f.Anonymous && f.Type == reflect.TypeFor[pool.NopObserver](), "%v does not embed pool.NopObserver", typ)
}
