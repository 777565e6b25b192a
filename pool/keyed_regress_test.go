package pool_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/pool"
)

// TestKeyedFreeRoomReachesAWaiterWhoseReserveWasRefused checks invariant
// 32: a's object is destroyed while b's first Acquire runs, so that b's
// reserve may be refused for a's waiter, which a's close has just made
// eligible, before that close frees its global slot; the room b was
// refused must still reach it. It counts the rounds where b is left
// waiting with free global room.
func TestKeyedFreeRoomReachesAWaiterWhoseReserveWasRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newKeyedMgr(3, 1)
		k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 3, MaxSizePerKey: 1})
		lost := 0
		for range 3000 {
			a1 := kacquire(t, k, "a")
			gotA := make(chan pool.Lease[*kobj], 1)
			go func() { gotA <- kacquire(t, k, "a") }()
			synctest.Wait()
			gotB := make(chan pool.Lease[*kobj], 1)
			ctx, cancel := context.WithCancel(context.Background())
			start := make(chan struct{})
			go func() {
				<-start
				l, err := k.Acquire(ctx, "b")
				if err == nil {
					gotB <- l
				} else {
					close(gotB)
				}
			}()
			go func() { <-start; a1.Destroy() }()
			close(start)
			a2 := <-gotA
			synctest.Wait()
			select {
			case l := <-gotB:
				l.Destroy()
			default:
				s := k.Stats()
				if s.Live < 3 {
					lost++
				}
				cancel()
				if l, ok := <-gotB; ok {
					l.Destroy()
				}
			}
			cancel()
			a2.Release()
			synctest.Wait()
		}
		require.Zero(t, lost, "rounds where b waited with free global room")
	})
}

// TestKeyedStatsAfterCloseCountNoPhantomObjects: a key dropped while a
// reserve that raced the drop held a slot (about to give it back) leaves
// no object in the totals.
func TestKeyedStatsAfterCloseCountNoPhantomObjects(t *testing.T) {
	m := newKeyedMgr(4, 4)
	m.connect = func(context.Context, string) error { return errFake }
	k, err := pool.NewKeyed[string, *kobj](m, pool.KeyedConfig{MaxSize: 4})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 3000 {
				l, err := k.Acquire(context.Background(), "x")
				if err == nil {
					l.Release()
				}
			}
		})
	}
	wg.Wait()
	require.NoError(t, k.Close(context.Background()))
	s := k.Stats()
	require.Zero(t, s.Live, "Live after Close")
	require.Zero(t, s.Connecting, "Connecting after Close")
}

// errObserver records the errors of the Acquires it sees end.
type errObserver struct {
	pool.NopObserver
	mu   sync.Mutex
	errs []error
}

func (o *errObserver) AcquireEnd(_ context.Context, ev pool.AcquireEvent) {
	if ev.Err != nil {
		o.mu.Lock()
		o.errs = append(o.errs, ev.Err)
		o.mu.Unlock()
	}
}

// TestKeyedDroppedKeyIsNotAskedAgain: a key whose state was dropped, still
// a P's last key, is not asked again: the Observer sees no Acquire end in
// ErrClosed, and an Acquire on an ended ctx is counted in the totals.
func TestKeyedDroppedKeyIsNotAskedAgain(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		obs := &errObserver{}
		m := newKeyedMgr(2, 2)
		k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 2, PerKey: pool.Config{Observer: obs}})
		kacquire(t, k, "a").Destroy()
		synctest.Wait() // a's state is dropped
		require.Zero(t, k.Len())
		kacquire(t, k, "a").Destroy()
		synctest.Wait()
		obs.mu.Lock()
		spurious := len(obs.errs)
		obs.mu.Unlock()

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := k.Acquire(ctx, "a")
		require.ErrorIs(t, err, context.Canceled)
		require.EqualValues(t, 1, k.Stats().Cancels, "Cancels")
		require.Zero(t, spurious, "spurious ErrClosed seen by the Observer")
	})
}

// TestKeyedAcquireTimeoutBoundsConnectRetriesOfANewKey: a keyed Acquire
// whose connects fail keeps its key's state while it retries (its failed
// connect frees the key's last slot with nobody queued), so AcquireTimeout
// ends it, as it ends a single pool's.
func TestKeyedAcquireTimeoutBoundsConnectRetriesOfANewKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newKeyedMgr(2, 2)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var n int
		var mu sync.Mutex
		m.connect = func(context.Context, string) error {
			mu.Lock()
			defer mu.Unlock()
			if n++; n == 500 {
				cancel() // stop the test's Acquire
			}
			return errFake
		}
		k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 2, PerKey: pool.Config{AcquireTimeout: time.Second}})
		start := time.Now()
		_, err := k.Acquire(ctx, "a")
		mu.Lock()
		defer mu.Unlock()
		require.ErrorIs(t, err, pool.ErrTimeout, "AcquireTimeout ends it")
		require.ErrorIs(t, err, errFake, "with the last connect error")
		require.Equal(t, time.Second, time.Since(start))
		require.Less(t, n, 500)
	})
}

// TestKeyedTryAcquireAndWarmMakeRoomAtTheCap: at the cap, a TryAcquire of
// a new key closes another key's idle object for its retry (as below the
// cap it starts a connect for it), and so does a Warm.
func TestKeyedTryAcquireAndWarmMakeRoomAtTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newKeyedMgr(1, 1)
		k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 1})
		kacquire(t, k, "a").Release() // a's object idle
		tries := 0
		for ; tries < 10; tries++ {
			l, err := k.TryAcquire(context.Background(), "b")
			if err == nil {
				l.Release()
				break
			}
			require.ErrorIs(t, err, pool.ErrExhausted)
			time.Sleep(time.Millisecond)
		}
		require.Less(t, tries, 10, "a TryAcquire of b got an object")
		require.Equal(t, uint64(1), k.Stats().ClosedBy[pool.CloseEvict])
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		require.NoError(t, k.Warm(ctx, "c"), "Warm of c with b's object idle")
		require.Equal(t, uint64(2), k.Stats().ClosedBy[pool.CloseEvict])
	})
}

// TestKeyedNilContextPanicsBeforeMakingKeyState: a nil ctx panics before
// the key's state is made, so nothing is left behind.
func TestKeyedNilContextPanicsBeforeMakingKeyState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newKeyedMgr(1, 1)
		k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 1})
		func() {
			defer func() { require.NotNil(t, recover()) }()
			//nolint:staticcheck // the misuse under test
			k.Acquire(nil, "x") //lint:ignore SA1012 the misuse under test
		}()
		synctest.Wait()
		require.Zero(t, k.Len(), "keys with state after a nil-ctx Acquire")
	})
}
