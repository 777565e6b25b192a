package pool_test

import (
	"context"
	"log/slog"
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

// A lease's leak clock starts when the lease is obtained (DESIGN.md,
// invariant 19): time spent waiting in line for it is not time held. The
// first holder keeps the one object 1 s, past the 500 ms threshold; the
// second waited that second in line and holds it 100 ms: one leak only.
func TestLeakClockStartsWhenTheLeaseIsObtained(t *testing.T) {
	for _, withObserver := range []bool{false, true} {
		t.Run(map[bool]string{false: "NoObserver", true: "Observer"}[withObserver], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				cfg := pool.Config{MaxSize: 1, LeakThreshold: 500 * time.Millisecond}
				r := newRecorder()
				if withObserver {
					cfg.Observer = r
				}
				p := newPool(t, &fakeMgr{}, cfg)
				first := acquire(t, p)
				done := make(chan struct{})
				go func() {
					defer close(done)
					l := acquire(t, p) // waits 1 s in line
					time.Sleep(100 * time.Millisecond)
					l.Release()
				}()
				time.Sleep(time.Second)
				first.Release()
				<-done
				time.Sleep(2 * time.Second)
				synctest.Wait()
				require.Equal(t, uint64(1), p.Stats().Leaks, "only the lease held 1 s")
				if withObserver {
					ev := <-r.leaks
					require.Equal(t, uint64(1), ev.ID)
					require.GreaterOrEqual(t, ev.Held, 500*time.Millisecond)
					require.Less(t, ev.Held, time.Second)
				}
			})
		})
	}
}

// Every AcquireStart has its AcquireEnd (DESIGN.md, invariant 21): an
// Acquire that panics (its Recycle did) or calls runtime.Goexit tells
// AcquireEnd so, with a *PanicError, before the panic goes on.
func TestAcquireEndIsCalledForAnAcquireThatPanics(t *testing.T) {
	for _, goexit := range []bool{false, true} {
		t.Run(map[bool]string{false: "Panic", true: "Goexit"}[goexit], func(t *testing.T) {
			var boom atomic.Bool
			f := &fakeMgr{recycle: func(context.Context, *obj, manager.Metrics) error {
				if boom.Swap(false) {
					if goexit {
						runtime.Goexit()
					}
					panic("recycle exploded")
				}
				return nil
			}}
			r := newRecorder()
			p := newPool(t, f, pool.Config{MaxSize: 1, Observer: r})
			fill(t, p, 1)
			boom.Store(true)
			done := make(chan any, 1)
			go func() {
				defer func() { done <- recover() }()
				_, _ = p.Acquire(context.Background())
			}()
			got := <-done
			if !goexit {
				require.Equal(t, "recycle exploded", got, "the panic goes on to the caller")
			}
			r.mu.Lock()
			require.Equal(t, 2, r.starts)
			require.Len(t, r.acquires, 2, "every AcquireStart has its AcquireEnd")
			var pe *pool.PanicError
			require.ErrorAs(t, r.acquires[1].Err, &pe)
			require.Equal(t, "Recycle", pe.Op)
			if !goexit {
				require.Equal(t, "recycle exploded", pe.Value)
			}
			r.mu.Unlock()
			acquire(t, p).Release() // the slot was freed by the guard
		})
	}
}

// panickyEnd is an Observer whose AcquireEnd panics after a successful
// Acquire while boom is set.
type panickyEnd struct {
	pool.NopObserver
	boom atomic.Bool
}

func (o *panickyEnd) AcquireEnd(_ context.Context, ev pool.AcquireEvent) {
	if ev.Err == nil && o.boom.Swap(false) {
		panic("observer exploded")
	}
}

// An AcquireEnd that panics after a successful Acquire costs no object: the
// pool takes it back before the panic reaches the caller.
func TestAcquireEndThatPanicsLosesNoObject(t *testing.T) {
	obs := &panickyEnd{}
	p := newPool(t, &fakeMgr{}, pool.Config{MaxSize: 1, Observer: obs})
	obs.boom.Store(true)
	require.PanicsWithValue(t, "observer exploded", func() { _, _ = p.Acquire(context.Background()) })
	st := p.Stats()
	require.Equal(t, 1, st.Live)
	require.Equal(t, 1, st.Idle, "the object went back")
	l, err := p.TryAcquire(context.Background())
	require.NoError(t, err)
	l.Release()
}

// An Acquire or TryAcquire whose context has already ended hands out
// nothing and still gives the Observer its start and its end.
func TestAcquireOnEndedContextIsObserved(t *testing.T) {
	r := newRecorder()
	p := newPool(t, &fakeMgr{}, pool.Config{MaxSize: 2, Observer: r})
	fill(t, p, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Acquire(ctx)
	require.ErrorIs(t, err, context.Canceled)
	_, err = p.TryAcquire(ctx)
	require.ErrorIs(t, err, context.Canceled)
	r.mu.Lock()
	defer r.mu.Unlock()
	require.Equal(t, 3, r.starts) // fill's Acquire, and these two
	require.Len(t, r.acquires, 3)
	for _, ev := range r.acquires[1:] {
		require.ErrorIs(t, ev.Err, context.Canceled)
		require.Zero(t, ev.ID)
	}
	require.Equal(t, 1, p.Stats().Idle, "nothing handed out")
}

// The slog observer logs what the caller caused at Debug: TryAcquire's
// ErrExhausted and an Acquire its caller cancelled; a timeout stays at
// Warn. A pool's Config.Name is on every line, and on its timeout errors.
func TestSlogObserverLevelsOfCallerCausedFailuresAndPoolName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf strings.Builder
		var mu sync.Mutex
		h := slog.NewTextHandler(writerFunc(func(b []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return buf.Write(b)
		}), &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "wait" || a.Key == "duration" {
				return slog.Attr{}
			}
			return a
		}})
		obs := pool.NewSlogObserver(slog.New(h), 0)
		p := newPool(t, &fakeMgr{}, pool.Config{Name: "db", MaxSize: 1, Observer: obs})
		other := newPool(t, &fakeMgr{}, pool.Config{Name: "cache", MaxSize: 1, Observer: obs})
		require.Equal(t, "db", p.Name())
		l := acquire(t, p)
		_, err := p.TryAcquire(context.Background())
		require.ErrorIs(t, err, pool.ErrExhausted)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(time.Millisecond); cancel() }()
		_, err = p.Acquire(ctx)
		require.ErrorIs(t, err, context.Canceled)
		ctx, cancel = context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		_, err = p.Acquire(ctx)
		require.ErrorIs(t, err, pool.ErrTimeout)
		require.Contains(t, err.Error(), "(pool=db live=1 ", "the timeout error names the pool")
		l.Release()
		acquire(t, other).Release()
		mu.Lock()
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		mu.Unlock()
		require.Len(t, lines, 5, lines)
		require.Equal(t, `level=DEBUG msg="pool: connected" pool=db id=1`, lines[0])
		require.Equal(t, `level=DEBUG msg="pool: acquire failed" pool=db error="pool: exhausted"`, lines[1])
		require.Equal(t, `level=DEBUG msg="pool: acquire failed" pool=db error="pool: acquire canceled: context canceled"`, lines[2])
		require.True(t, strings.HasPrefix(lines[3], `level=WARN msg="pool: acquire failed" pool=db error="pool: acquire timed out`), lines[3])
		require.Equal(t, `level=DEBUG msg="pool: connected" pool=cache id=1`, lines[4], "each pool its own name")
	})
}

// A Close that runs out of time says what it still waits for, in an error
// that matches its context's.
func TestCloseThatRunsOutOfTimeSaysWhatItWaitsFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		f := &fakeMgr{close: func(o *obj) {
			if o.id == 1 {
				<-gate // a close that hangs
			}
		}}
		p, err := pool.New[*obj](f, pool.Config{Name: "db", MaxSize: 3})
		require.NoError(t, err)
		a, b := acquire(t, p), acquire(t, p)
		a.Destroy()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err = p.Close(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.EqualError(t, err, "pool: Close: context deadline exceeded (pool=db still waiting for 1 leased, 1 closing)")
		close(gate)
		b.Release()
		require.NoError(t, p.Close(context.Background()))
	})
}
