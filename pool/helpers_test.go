package pool_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// TestMain says, in one line on standard error, when the Redis integration
// test skips and how to enable it (a t.Skip message shows only with -v).
func TestMain(m *testing.M) {
	if os.Getenv(envRedisAddr) == "" {
		fmt.Fprintf(os.Stderr, "integration test of package pool skipped: set %s (e.g. %s=127.0.0.1:6379) to run it\n", envRedisAddr, envRedisAddr)
	}
	goleak.VerifyTestMain(m)
}

// obj is a test object. inUse is set while a lease holds it: a second
// holder is a failure of exclusive ownership.
type obj struct {
	id     int64
	inUse  atomic.Bool
	closed atomic.Bool
}

// fakeMgr is a Manager[*obj] whose faults tests switch on.
type fakeMgr struct {
	nextID   atomic.Int64
	closes   atomic.Int64
	recycles atomic.Int64
	// Optional hooks; nil means success.
	connect func(ctx context.Context) error
	recycle func(ctx context.Context, o *obj, m manager.Metrics) error
	close   func(o *obj)

	mu       sync.Mutex
	problems []string // invariant violations seen inside the manager
}

var errFake = errors.New("fake failure")

func (f *fakeMgr) Connect(ctx context.Context) (*obj, error) {
	if f.connect != nil {
		if err := f.connect(ctx); err != nil {
			return nil, err
		}
	}
	return &obj{id: f.nextID.Add(1)}, nil
}

func (f *fakeMgr) Recycle(ctx context.Context, o *obj, m manager.Metrics) error {
	f.recycles.Add(1)
	if o.closed.Load() {
		f.problem("recycle of a closed object")
	}
	if f.recycle != nil {
		return f.recycle(ctx, o, m)
	}
	return nil
}

func (f *fakeMgr) Close(o *obj) error {
	if o.closed.Swap(true) {
		f.problem("object closed twice")
	}
	if f.close != nil {
		f.close(o)
	}
	f.closes.Add(1)
	return nil
}

func (f *fakeMgr) problem(s string) {
	f.mu.Lock()
	f.problems = append(f.problems, s)
	f.mu.Unlock()
}

func (f *fakeMgr) check(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	require.Empty(t, f.problems)
}

// newPool makes a pool and closes it (requiring nil) at the end of the test.
func newPool(t *testing.T, m manager.Manager[*obj], cfg pool.Config) *pool.Pool[*obj] {
	t.Helper()
	p, err := pool.New(m, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, p.Close(ctx), "Close after the test")
		if f, ok := m.(*fakeMgr); ok {
			f.check(t)
			require.Equal(t, f.nextID.Load(), f.closes.Load()+int64(p.Stats().Detached), "created == closed + detached after Close")
		}
	})
	return p
}

func acquire(t *testing.T, p *pool.Pool[*obj]) pool.Lease[*obj] {
	t.Helper()
	l, err := p.Acquire(context.Background())
	require.NoError(t, err)
	return l
}

// testMode is the path a behaviour test drives the pool down.
type testMode int

const (
	// plainMode is the pool as the test configures it: without an option
	// that needs a hook, Acquire and Release take their fast paths, which
	// carry hand-made copies of the check and of the per-P stack's Push.
	plainMode testMode = iota
	// hookedMode adds Config.Observer = NopObserver (unless the test sets an
	// Observer): every Acquire and Release takes its slow path (check,
	// hint), so that a behaviour on which the copies and the originals
	// disagree fails in one of the two modes.
	hookedMode
)

func (m testMode) String() string { return [...]string{"Plain", "Hooked"}[m] }

// run runs a behaviour test down both paths, as the subtests Plain and
// Hooked, each in a synctest bubble: the pool, made inside it, runs on the
// bubble's clock, which moves only when every goroutine of the bubble is
// blocked (so a time.Sleep of the test's is the pool's clock moving, tick by
// tick, with the maintainer running), and settle returns once every
// goroutine of the pool and the test is blocked.
func run(t *testing.T, f func(t *testing.T, mode testMode)) {
	t.Helper()
	for _, m := range []testMode{plainMode, hookedMode} {
		t.Run(m.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { f(t, m) })
		})
	}
}

// runSub is run as a subtest of t named name.
func runSub(t *testing.T, name string, f func(t *testing.T, mode testMode)) {
	t.Helper()
	t.Run(name, func(t *testing.T) { run(t, f) })
}

// config returns cfg as the mode runs it.
func (m testMode) config(cfg pool.Config) pool.Config {
	if m == hookedMode && cfg.Observer == nil {
		cfg.Observer = pool.NopObserver{}
	}
	return cfg
}

// newPool is newPool with the mode's config.
func (m testMode) newPool(t *testing.T, mgr manager.Manager[*obj], cfg pool.Config) *pool.Pool[*obj] {
	t.Helper()
	return newPool(t, mgr, m.config(cfg))
}

// requireLive requires that the pool has n live objects once the bubble has
// settled (see settle): objects being closed keep their slots until
// Manager.Close has returned on a closer goroutine.
func requireLive(t *testing.T, p *pool.Pool[*obj], n int, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, n, settle(t, p).Live, msgAndArgs...)
}

// settle waits until every other goroutine of the test's synctest bubble —
// the pool's maintainer, dialers, closers and waiters, and the test's own —
// is blocked, and returns the pool's stats then. What the pool would do next
// waits for a release, a cancellation or its clock. It must be called in a
// bubble (run, or synctest.Test).
func settle(t *testing.T, p *pool.Pool[*obj]) pool.Stats {
	t.Helper()
	synctest.Wait()
	return p.Stats()
}

// releaseTwice starts two goroutines on wg that release l at once, and
// counts in panics those that panicked.
func releaseTwice(wg *sync.WaitGroup, l pool.Lease[*obj], panics *atomic.Int32) {
	for range 2 {
		wg.Go(func() {
			defer func() {
				if recover() != nil {
					panics.Add(1)
				}
			}()
			l.Release()
		})
	}
}
