package pool_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
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

// requireLive waits until the pool has n live objects. Objects being closed
// keep their slots until Manager.Close has returned on a closer goroutine, so
// Live reaches its value shortly after the discard that lowers it.
func requireLive(t *testing.T, p *pool.Pool[*obj], n int, msgAndArgs ...any) {
	t.Helper()
	require.Eventually(t, func() bool { return p.Stats().Live == n }, 5*time.Second, time.Millisecond, msgAndArgs...)
}

// settle waits until no object is being closed and returns the pool's stats.
// Closes run on closer goroutines and are counted when Manager.Close returns.
func settle(t *testing.T, p *pool.Pool[*obj]) pool.Stats {
	t.Helper()
	require.Eventually(t, func() bool { return p.Stats().Closing == 0 }, 5*time.Second, time.Millisecond)
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
