package pool_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// No panic in user code kills the process from a goroutine the pool started
// (DESIGN.md, invariant 24): a Manager.Connect or Manager.Close that panics,
// or calls runtime.Goexit, on a dialer or closer goroutine is recovered, its
// slot freed and the failure counted and reported; an Observer method that
// panics there is dropped.

// explodingConnect panics (or calls runtime.Goexit) in the connects that
// boom says, and connects otherwise.
type explodingConnect struct {
	made, closed atomic.Int64
	boom         func(n int64) bool // n counts connects from 1
	goexit       bool
	calls        atomic.Int64
}

func (m *explodingConnect) Connect(context.Context) (*obj, error) {
	if m.boom(m.calls.Add(1)) {
		if m.goexit {
			runtime.Goexit()
		}
		panic("connect exploded")
	}
	return &obj{id: m.made.Add(1)}, nil
}

func (m *explodingConnect) Recycle(context.Context, *obj, manager.Metrics) error { return nil }

func (m *explodingConnect) Close(*obj) error { m.closed.Add(1); return nil }

// connectEnds is an Observer that keeps the ConnectEnd and Closed events.
type connectEnds struct {
	pool.NopObserver
	mu       sync.Mutex
	connects []pool.ConnectEvent
	closes   []pool.CloseEvent
}

func (o *connectEnds) ConnectEnd(_ context.Context, ev pool.ConnectEvent) {
	o.mu.Lock()
	o.connects = append(o.connects, ev)
	o.mu.Unlock()
}

func (o *connectEnds) Closed(_ context.Context, ev pool.CloseEvent) {
	o.mu.Lock()
	o.closes = append(o.closes, ev)
	o.mu.Unlock()
}

func (o *connectEnds) failedConnects() []error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var errs []error
	for _, ev := range o.connects {
		if ev.Err != nil {
			errs = append(errs, ev.Err)
		}
	}
	return errs
}

// requirePanicError checks that err carries the panic of op: its value and
// the stack of the goroutine that panicked.
func requirePanicError(t *testing.T, err error, op string, goexit bool) {
	t.Helper()
	var pe *pool.PanicError
	require.ErrorAs(t, err, &pe)
	require.Equal(t, op, pe.Op)
	if goexit {
		require.Nil(t, pe.Value)
		require.Contains(t, err.Error(), "runtime.Goexit")
	} else {
		require.Equal(t, strings.ToLower(op)+" exploded", pe.Value)
		require.Contains(t, err.Error(), strings.ToLower(op)+" exploded")
	}
	require.Contains(t, string(pe.Stack), "(*exploding"+op+")."+op, "the stack of the goroutine that panicked")
	require.Contains(t, err.Error(), "(*exploding"+op+")."+op, "Error() carries the stack")
}

func TestConnectPanicIsAConnectErrorThatCarriesThePanic(t *testing.T) {
	for _, goexit := range []bool{false, true} {
		name := map[bool]string{false: "Panic", true: "Goexit"}[goexit]
		t.Run("Acquire/"+name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := &explodingConnect{boom: func(n int64) bool { return n == 1 }, goexit: goexit}
				obs := &connectEnds{}
				p, err := pool.New[*obj](m, pool.Config{MaxSize: 1, Observer: obs})
				require.NoError(t, err)
				defer func() { require.NoError(t, p.Close(context.Background())) }()
				_, err = p.Acquire(context.Background())
				requirePanicError(t, err, "Connect", goexit)
				require.Contains(t, err.Error(), "pool: connect: ")
				st := p.Stats()
				require.Equal(t, uint64(1), st.ConnectErrors)
				require.Zero(t, st.Live, "the slot is free")
				errs := obs.failedConnects()
				require.Len(t, errs, 1, "the Observer saw the failed connect")
				requirePanicError(t, errs[0], "Connect", goexit)
				l, err := p.Acquire(context.Background()) // MaxSize 1: the slot came back
				require.NoError(t, err)
				l.Release()
			})
		})
	}
	t.Run("TryAcquire", func(t *testing.T) {
		// TryAcquire's background connect: nobody waits for it, and the
		// process survives.
		synctest.Test(t, func(t *testing.T) {
			m := &explodingConnect{boom: func(n int64) bool { return n == 1 }}
			obs := &connectEnds{}
			p, err := pool.New[*obj](m, pool.Config{MaxSize: 1, Observer: obs})
			require.NoError(t, err)
			defer func() { require.NoError(t, p.Close(context.Background())) }()
			_, err = p.TryAcquire(context.Background())
			require.ErrorIs(t, err, pool.ErrExhausted)
			synctest.Wait()
			st := p.Stats()
			require.Equal(t, uint64(1), st.ConnectErrors)
			require.Zero(t, st.Live)
			require.Len(t, obs.failedConnects(), 1)
			requirePanicError(t, obs.failedConnects()[0], "Connect", false)
			_, err = p.TryAcquire(context.Background())
			require.ErrorIs(t, err, pool.ErrExhausted)
			synctest.Wait()
			l, err := p.TryAcquire(context.Background())
			require.NoError(t, err, "the second background connect made an object")
			l.Release()
		})
	})
	t.Run("MinIdle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := &explodingConnect{boom: func(n int64) bool { return n <= 3 }}
			obs := &connectEnds{}
			p, err := pool.New[*obj](m, pool.Config{MaxSize: 2, MinIdle: 1, Observer: obs})
			require.NoError(t, err)
			defer func() { require.NoError(t, p.Close(context.Background())) }()
			time.Sleep(10 * time.Second) // the maintainer retries after its back-off
			synctest.Wait()
			st := p.Stats()
			require.Equal(t, uint64(3), st.ConnectErrors, "the three panics, counted")
			require.Equal(t, 1, st.Idle, "MinIdle made in the end")
			require.Len(t, obs.failedConnects(), 3)
			requirePanicError(t, obs.failedConnects()[2], "Connect", false)
		})
	})
	t.Run("Warm", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := &explodingConnect{boom: func(int64) bool { return true }}
			p, err := pool.New[*obj](m, pool.Config{MaxSize: 2})
			require.NoError(t, err)
			defer func() { require.NoError(t, p.Close(context.Background())) }()
			err = p.Warm(context.Background())
			requirePanicError(t, err, "Connect", false)
			require.Zero(t, p.Stats().Live)
		})
	})
}

// explodingClose panics (or calls runtime.Goexit) in every Close.
type explodingClose struct {
	fakeMgr
	goexit bool
}

func (m *explodingClose) Close(o *obj) error {
	m.closes.Add(1)
	if m.goexit {
		runtime.Goexit()
	}
	panic("close exploded")
}

func TestClosePanicIsAFailedCloseThatFreesTheSlot(t *testing.T) {
	for _, goexit := range []bool{false, true} {
		name := map[bool]string{false: "Panic", true: "Goexit"}[goexit]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := &explodingClose{goexit: goexit}
				obs := &connectEnds{}
				p, err := pool.New[*obj](m, pool.Config{MaxSize: 1, Observer: obs})
				require.NoError(t, err)
				l, err := p.Acquire(context.Background())
				require.NoError(t, err)
				l.Destroy()
				synctest.Wait()
				st := p.Stats()
				require.Equal(t, uint64(1), st.ClosedBy[pool.CloseDestroy])
				require.Equal(t, uint64(1), st.CloseErrors)
				require.Zero(t, st.Live, "the slot is free")
				obs.mu.Lock()
				require.Len(t, obs.closes, 1)
				requirePanicError(t, obs.closes[0].Err, "Close", goexit)
				obs.mu.Unlock()
				l, err = p.Acquire(context.Background()) // MaxSize 1: the slot came back
				require.NoError(t, err)
				l.Release()
				require.NoError(t, p.Close(context.Background()), "Close waits for the panicking close, and returns")
				require.Equal(t, uint64(2), p.Stats().CloseErrors)
			})
		})
	}
}

// panickingObserver panics in every method the pool calls on its own
// goroutines.
type panickingObserver struct {
	pool.NopObserver
	calls atomic.Int64
}

func (o *panickingObserver) ConnectEnd(context.Context, pool.ConnectEvent) {
	o.calls.Add(1)
	panic("observer exploded")
}

func (o *panickingObserver) Closed(context.Context, pool.CloseEvent) {
	o.calls.Add(1)
	panic("observer exploded")
}

func (o *panickingObserver) Leak(context.Context, pool.LeakEvent) {
	o.calls.Add(1)
	panic("observer exploded")
}

func TestObserverPanicOnAPoolGoroutineIsDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeMgr{}
		obs := &panickingObserver{}
		p := newPool(t, f, pool.Config{MaxSize: 2, LeakThreshold: time.Second, Observer: obs})
		l := acquire(t, p) // ConnectEnd on the dialer
		time.Sleep(2 * time.Second)
		synctest.Wait() // Leak on the maintainer
		require.Equal(t, uint64(1), p.Stats().Leaks)
		l.Destroy() // Closed on a closer
		synctest.Wait()
		require.Equal(t, int64(3), obs.calls.Load())
		st := p.Stats()
		require.Zero(t, st.Live)
		require.Equal(t, uint64(1), st.ClosedBy[pool.CloseDestroy])
		require.Zero(t, st.CloseErrors, "the close itself went well")
		acquire(t, p).Release()
	})
}
