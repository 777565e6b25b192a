package pool_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/pool"
)

// How room moves between keys (DESIGN.md, "Keyed pools"). Each test runs in
// a synctest bubble, with connects that take connectCost, so that the
// budget's bound (one connect) is connectCost and its surplus age four of
// them, and with a keyed clock of a millisecond, so that idle times of a few
// milliseconds can be told apart.

const connectCost = 10 * time.Millisecond

// roomKeyed makes a keyed pool of cfg over a manager whose connects take
// connectCost, with a 1 ms clock.
func roomKeyed(t *testing.T, cfg pool.KeyedConfig) (*pool.Keyed[string, *kobj], *keyedMgr) {
	t.Helper()
	t.Cleanup(pool.SetKeyedTick(time.Millisecond))
	m := newKeyedMgr(cfg.MaxSize, cfg.MaxSize)
	if cfg.MaxSizePerKey > 0 {
		m.maxPerKey = cfg.MaxSizePerKey
	}
	m.connect = func(context.Context, string) error {
		time.Sleep(connectCost)
		return nil
	}
	return newKeyed(t, m, cfg), m
}

// evictions sums every reason a keyed pool closes an object for room.
func evictions(s pool.Stats) uint64 {
	return s.ClosedBy[pool.CloseEvict] + s.ClosedBy[pool.CloseEvictSurplus] + s.ClosedBy[pool.CloseEvictHot]
}

// acquireLater starts an Acquire of key and returns the channel its lease
// comes on.
func acquireLater(t *testing.T, k *pool.Keyed[string, *kobj], key string) <-chan pool.Lease[*kobj] {
	got := make(chan pool.Lease[*kobj], 1)
	go func() { got <- kacquire(t, k, key) }()
	return got
}

// A key that holds objects is served by its own releases: its waiter does
// not close another key's warm idle object (one idle for less than the
// surplus age) to open one of its own, even at the global cap.
func TestKeyedKeyWithObjectsIsServedByItsOwnReleases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, m := roomKeyed(t, pool.KeyedConfig{MaxSize: 2})
		a := kacquire(t, k, "a")
		kacquire(t, k, "b").Release() // b's object is idle, and warm
		got := acquireLater(t, k, "a")
		time.Sleep(3 * connectCost) // less than the surplus age
		synctest.Wait()
		require.Len(t, got, 0, "a's waiter took room from b")
		first := a.Value()
		a.Release()
		a2 := <-got
		require.Same(t, first, a2.Value(), "a's waiter got a's own released object")
		require.Zero(t, evictions(k.Stats()))
		require.Empty(t, m.closedKeys())
		a2.Release()
	})
}

// A key whose waiter finds no object of its own takes the room of an object
// idle long enough to be surplus (four connects): CloseEvictSurplus.
func TestKeyedKeyGrowsIntoAnObjectIdleLongEnoughToBeSurplus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, m := roomKeyed(t, pool.KeyedConfig{MaxSize: 2})
		a := kacquire(t, k, "a")
		kacquire(t, k, "b").Release()
		time.Sleep(10 * connectCost) // b's object is surplus now
		start := time.Now()
		a2 := kacquire(t, k, "a")
		require.Equal(t, connectCost, time.Since(start), "the room at once, then one connect")
		synctest.Wait()
		s := k.Stats()
		require.Equal(t, uint64(1), s.ClosedBy[pool.CloseEvictSurplus])
		require.Equal(t, uint64(1), evictions(s))
		require.Equal(t, []string{"b"}, m.closedKeys())
		as, _ := k.KeyStats("a")
		require.Equal(t, 2, as.Live, "a grew to two objects")
		a.Release()
		a2.Release()
	})
}

// A key whose waiters outnumber its objects takes, once it has waited
// bound (one connect), an idle object of a key nobody waits for that has
// been idle at least bound, though not surplus: CloseEvictHot. Before the
// bound it takes nothing.
func TestKeyedHungryKeyTakesAnObjectIdleForBoundOnceItHasWaitedBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, _ := roomKeyed(t, pool.KeyedConfig{MaxSize: 2})
		a := kacquire(t, k, "a")
		kacquire(t, k, "b").Release()
		start := time.Now()
		got1, got2 := acquireLater(t, k, "a"), acquireLater(t, k, "a") // two waiters, one object
		time.Sleep(connectCost / 2)
		synctest.Wait()
		require.Zero(t, evictions(k.Stats()), "before the bound")
		var a2 pool.Lease[*kobj]
		select { // the first waiter gets the new object, the other waits for a's
		case a2 = <-got1:
			got1 = got2
		case a2 = <-got2:
		}
		waited := time.Since(start)
		require.GreaterOrEqual(t, waited, 2*connectCost, "the bound, then a connect")
		require.LessOrEqual(t, waited, 3*connectCost)
		s := k.Stats()
		require.Equal(t, uint64(1), s.ClosedBy[pool.CloseEvictHot])
		require.Equal(t, uint64(1), evictions(s))
		a.Release()
		a3 := <-got1
		a2.Release()
		a3.Release()
	})
}

// A key whose one object is in use keeps it for its waiters until a
// starving key (no object, waiters) has starved for bound; then the next
// release is closed for the starving key. So the starving key waits about
// one connect plus one use, and the object it takes has served its key for
// at least as long as the connect that moves it costs.
func TestKeyedKeyWithOneObjectKeepsItForItsWaitersForAboutOneConnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, _ := roomKeyed(t, pool.KeyedConfig{MaxSize: 1})
		kacquire(t, k, "b").Release()
		var uses atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 2 { // b always has a waiter
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					l := kacquire(t, k, "b")
					uses.Add(1)
					time.Sleep(time.Millisecond)
					l.Release()
				}
			})
		}
		time.Sleep(5 * time.Millisecond)
		before := uses.Load()
		start := time.Now()
		a := kacquire(t, k, "a")
		waited := time.Since(start)
		require.GreaterOrEqual(t, waited, 2*connectCost, "b kept its object for the bound, then a connected")
		require.LessOrEqual(t, waited, 2*connectCost+3*time.Millisecond, "one use of b's object past the bound")
		require.GreaterOrEqual(t, uses.Load()-before, int64(connectCost/time.Millisecond)-1, "b's waiters used it meanwhile")
		require.Equal(t, uint64(1), k.Stats().ClosedBy[pool.CloseEvict])
		close(stop)
		a.Release()
		wg.Wait()
	})
}

// Room freed at the global cap goes to the starving key with the most
// waiters (among the first few in arrival order), as commons-pool2's
// reuseCapacity gives it to the key with the most waiting threads.
func TestKeyedStarvingKeyWithTheMostWaitersGetsRoomFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, _ := roomKeyed(t, pool.KeyedConfig{MaxSize: 1})
		x := kacquire(t, k, "x")
		var served []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, key := range []string{"one", "two", "two", "three", "three", "three"} {
			wg.Go(func() {
				l := kacquire(t, k, key)
				mu.Lock()
				served = append(served, key)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				l.Release()
			})
			synctest.Wait()
		}
		x.Destroy() // its slot is free at once: before any key has starved for bound
		wg.Wait()
		require.Equal(t, "three", served[0])
	})
}

// Review of faults: each of these failed before keyed room moved only when
// it pays.

// Warm of a key at the global cap, whose pool holds an idle object already,
// never closes its own key's object to connect another (it closed it,
// reconnected and closed it again until its context ended), and takes no
// other key's warm object: it waits for room, and its context ends it.
func TestKeyedWarmAtTheCapClosesNeitherItsOwnNorAWarmObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, m := roomKeyed(t, pool.KeyedConfig{MaxSize: 2, PerKey: pool.Config{MinIdle: 2}})
		require.NoError(t, k.Warm(context.Background(), "a")) // a fills the budget
		kacquire(t, k, "b").Release()                         // b takes one of a's: the cap, a key each
		synctest.Wait()
		closes, evicted := len(m.closedKeys()), evictions(k.Stats())
		ctx, cancel := context.WithTimeout(context.Background(), 3*connectCost)
		defer cancel()
		err := k.Warm(ctx, "a") // a wants two again
		require.ErrorIs(t, err, context.DeadlineExceeded)
		synctest.Wait()
		require.Equal(t, evicted, evictions(k.Stats()), "Warm closed an object for its room")
		require.Len(t, m.closedKeys(), closes)
		as, _ := k.KeyStats("a")
		bs, _ := k.KeyStats("b")
		require.Equal(t, 1, as.Idle)
		require.Equal(t, 1, bs.Idle)
	})
}

// TryAcquire of a key at its own MaxSizePerKey closes nothing: the room it
// would make is room the key cannot use (it closed an unrelated key's idle
// object, and the room stayed empty).
func TestKeyedTryAcquireAtItsOwnLimitClosesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, m := roomKeyed(t, pool.KeyedConfig{MaxSize: 2, MaxSizePerKey: 1})
		a := kacquire(t, k, "a")
		kacquire(t, k, "b").Release()
		time.Sleep(10 * connectCost) // b's object is surplus: still not a's to take
		_, err := k.TryAcquire(context.Background(), "a")
		require.ErrorIs(t, err, pool.ErrExhausted)
		synctest.Wait()
		require.Zero(t, evictions(k.Stats()))
		require.Empty(t, m.closedKeys())
		a.Release()
	})
}

// blockingObserver is an Observer whose ConnectEnd waits until release is
// closed.
type blockingObserver struct {
	pool.NopObserver
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (o *blockingObserver) ConnectEnd(context.Context, pool.ConnectEvent) {
	o.once.Do(func() { close(o.entered) })
	<-o.release
}

// Close returns only once every goroutine of the keyed pool has ended, a
// dropped key's included: a key whose only connect failed is dropped as its
// slot is freed, before the dialer reports the connect to the Observer, and
// Close returned while that call still ran.
func TestKeyedCloseWaitsForTheObserverCallOfADroppedKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		obs := &blockingObserver{entered: make(chan struct{}), release: make(chan struct{})}
		m := newKeyedMgr(1, 1)
		m.connect = func(context.Context, string) error { return errFake }
		k, err := pool.NewKeyed[string, *kobj](m, pool.KeyedConfig{MaxSize: 1, PerKey: pool.Config{Observer: obs}})
		require.NoError(t, err)
		go func() { _, _ = k.TryAcquire(context.Background(), "a") }() // a background connect
		<-obs.entered
		synctest.Wait()
		require.Zero(t, k.Len(), "the key's state was dropped with its failed connect")
		closed := make(chan error, 1)
		go func() { closed <- k.Close(context.Background()) }()
		synctest.Wait()
		require.Len(t, closed, 0, "Close returned while the dropped key's ConnectEnd ran")
		close(obs.release)
		require.NoError(t, <-closed)
	})
}

// A keyed Acquire that times out names the keyed pool's figures beside its
// key's: its key holds nothing, and the budget is held by another key.
func TestKeyedAcquireTimeoutNamesTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, _ := roomKeyed(t, pool.KeyedConfig{MaxSize: 1, PerKey: pool.Config{AcquireTimeout: 5 * connectCost}})
		a := kacquire(t, k, "a")
		_, err := k.Acquire(context.Background(), "b")
		require.ErrorIs(t, err, pool.ErrTimeout)
		require.ErrorContains(t, err, "live=0 idle=0 leased=0 waiting=0")
		require.ErrorContains(t, err, "all keys: live=1 of MaxSize=1")
		a.Release()
	})
}

// A key's counters count from the moment its state was last made (as
// KeyStats says); the keyed pool's totals keep a dropped key's counts.
func TestKeyedKeyStatsCountFromTheKeysStateAndTheTotalsKeepThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, _ := roomKeyed(t, pool.KeyedConfig{MaxSize: 2})
		kacquire(t, k, "a").Destroy()
		synctest.Wait()
		_, ok := k.KeyStats("a")
		require.False(t, ok, "a's state was dropped with its last object")
		kacquire(t, k, "a").Release()
		as, ok := k.KeyStats("a")
		require.True(t, ok)
		require.Equal(t, uint64(1), as.Acquires, "a's counters start again")
		require.Equal(t, uint64(2), k.Stats().Acquires, "the totals keep the dropped state's")
	})
}

// A key that has starved for bound is served first, whatever its number of
// waiters, when room comes back through closes only (MaxUses 1, Destroy):
// two keys with two waiters each took every freed slot from a key with one,
// which waited until its context ended.
func TestKeyedStarvingKeyIsServedFirstOnceItHasStarvedForBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, _ := roomKeyed(t, pool.KeyedConfig{MaxSize: 1, PerKey: pool.Config{MaxUses: 1}})
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, key := range []string{"p", "p", "q", "q"} {
			wg.Go(func() {
				for ctx.Err() == nil {
					if l, err := k.Acquire(ctx, key); err == nil {
						time.Sleep(time.Millisecond)
						l.Release() // MaxUses 1: closed, its slot freed
					}
				}
			})
		}
		time.Sleep(5 * connectCost)
		start := time.Now()
		octx, cancel := context.WithTimeout(context.Background(), 100*connectCost)
		defer cancel()
		l, err := k.Acquire(octx, "old") // one waiter, against two of p's and q's
		waited := time.Since(start)
		stop()
		wg.Wait()
		require.NoError(t, err, "the key with one waiter was passed over")
		l.Release()
		// bound, then the use and the close of the object in hand, then
		// its own connect.
		require.LessOrEqual(t, waited, 3*connectCost, "the key with one waiter waited %v", waited)
	})
}

// A key whose waiters all back off after failed connects asks for no room:
// free room goes to the keys that can connect with it (a TryAcquire or a
// Warm of another key found the budget held for the key backing off).
func TestKeyedKeyBackingOffAfterFailedConnectsLeavesFreeRoomToOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, m := roomKeyed(t, pool.KeyedConfig{MaxSize: 4, PerKey: pool.Config{AcquireTimeout: 300 * connectCost}})
		m.connect = func(_ context.Context, key string) error {
			if key == "down" {
				return errFake
			}
			time.Sleep(connectCost)
			return nil
		}
		down := make(chan error, 1)
		go func() {
			_, err := k.Acquire(context.Background(), "down") // retries its connect
			down <- err
		}()
		time.Sleep(5 * connectCost)
		_, err := k.TryAcquire(context.Background(), "up") // starts a connect
		require.ErrorIs(t, err, pool.ErrExhausted)
		time.Sleep(2 * connectCost)
		l, err := k.TryAcquire(context.Background(), "up")
		require.NoError(t, err, "free room went unused while another key backed off")
		l.Release()
		ctx, cancel := context.WithTimeout(context.Background(), 10*connectCost)
		defer cancel()
		require.NoError(t, k.Warm(ctx, "up2"))
		require.ErrorIs(t, <-down, pool.ErrTimeout)
	})
}

// TryAcquire of a key that holds nothing, at the cap, closes one idle
// object of another key for it, and no other while that close runs: its
// retries do not close one object each.
func TestKeyedTryAcquireClosesOneObjectForItsKeyAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, m := roomKeyed(t, pool.KeyedConfig{MaxSize: 4})
		for _, key := range []string{"a", "b", "c", "d"} {
			kacquire(t, k, key).Release()
		}
		m.close = func(string) { time.Sleep(5 * connectCost) }
		time.Sleep(10 * connectCost) // every object is surplus
		for range 5 {
			_, err := k.TryAcquire(context.Background(), "new")
			require.ErrorIs(t, err, pool.ErrExhausted)
			time.Sleep(time.Millisecond)
		}
		time.Sleep(10 * connectCost) // the closes end
		require.Equal(t, uint64(1), evictions(k.Stats()), "one close for the key's room")
		require.Len(t, m.closedKeys(), 1)
	})
}

// A key that holds nothing takes an idle object of a key holding two or
// more (one it can spare) without waiting for bound, whichever way that
// object was released: a release on the fast path (no waiter on its key)
// left it waiting for bound.
func TestKeyedStarvingKeyTakesAnObjectAKeyCanSpareWithoutWaitingBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k, _ := roomKeyed(t, pool.KeyedConfig{MaxSize: 2})
		a1, a2 := kacquire(t, k, "a"), kacquire(t, k, "a")
		a1.Release()
		a2.Release()
		a1, a2 = kacquire(t, k, "a"), kacquire(t, k, "a") // stamped with this tick: a1's release takes the fast path
		start := time.Now()
		got := acquireLater(t, k, "b")
		synctest.Wait()
		a1.Release()
		b := <-got
		waited := time.Since(start)
		require.Less(t, waited, 2*connectCost, "b waited %v: bound, then its connect", waited)
		require.Equal(t, uint64(1), k.Stats().ClosedBy[pool.CloseEvict])
		b.Release()
		a2.Release()
	})
}
