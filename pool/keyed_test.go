package pool_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// kobj is a keyed test object: the key it was made for, and the holder
// flag of obj.
type kobj struct {
	key string
	obj
}

// keyedMgr is a manager.Keyed[string, *kobj] that counts, per key and in
// all, the objects from the start of their Connect to the end of their
// Close — a window inside the pool's slot for the object — and records a
// problem whenever a count passes the limits it is given.
type keyedMgr struct {
	max, maxPerKey int
	// connect, if set, runs first in Connect; an error fails it.
	connect func(ctx context.Context, key string) error
	// close, if set, runs first in Close.
	close func(key string)

	mu       sync.Mutex
	open     map[string]int
	total    int
	peak     int
	closed   []string // keys of the closed objects, in order
	problems []string
	nextID   atomic.Int64
	closes   atomic.Int64
}

func newKeyedMgr(max, maxPerKey int) *keyedMgr {
	return &keyedMgr{max: max, maxPerKey: maxPerKey, open: map[string]int{}}
}

func (m *keyedMgr) Connect(ctx context.Context, key string) (*kobj, error) {
	m.mu.Lock()
	m.open[key]++
	m.total++
	m.peak = max(m.peak, m.total)
	if m.total > m.max {
		m.problems = append(m.problems, fmt.Sprintf("%d objects of all keys, MaxSize %d", m.total, m.max))
	}
	if m.open[key] > m.maxPerKey {
		m.problems = append(m.problems, fmt.Sprintf("%d objects of key %s, MaxSizePerKey %d", m.open[key], key, m.maxPerKey))
	}
	m.mu.Unlock()
	if m.connect != nil {
		if err := m.connect(ctx, key); err != nil {
			m.gone(key)
			return nil, err
		}
	}
	return &kobj{key: key, obj: obj{id: m.nextID.Add(1)}}, nil
}

func (m *keyedMgr) Recycle(_ context.Context, o *kobj, _ manager.Metrics) error {
	if o.closed.Load() {
		m.problem("recycle of a closed object")
	}
	return nil
}

func (m *keyedMgr) Close(o *kobj) error {
	if m.close != nil {
		m.close(o.key)
	}
	if o.closed.Swap(true) {
		m.problem("object closed twice")
	}
	m.closes.Add(1)
	m.mu.Lock()
	m.closed = append(m.closed, o.key)
	m.mu.Unlock()
	m.gone(o.key)
	return nil
}

func (m *keyedMgr) gone(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.total--
	if m.open[key]--; m.open[key] == 0 {
		delete(m.open, key)
	}
}

func (m *keyedMgr) problem(s string) {
	m.mu.Lock()
	m.problems = append(m.problems, s)
	m.mu.Unlock()
}

func (m *keyedMgr) closedKeys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.closed...)
}

// newKeyed makes a keyed pool over m and, at the end of the test, closes it
// and requires that nothing went wrong and nothing was lost.
func newKeyed(t *testing.T, m *keyedMgr, cfg pool.KeyedConfig) *pool.Keyed[string, *kobj] {
	t.Helper()
	k, err := pool.NewKeyed[string, *kobj](m, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, k.Close(ctx), "Close after the test")
		m.mu.Lock()
		defer m.mu.Unlock()
		require.Empty(t, m.problems)
		require.Zero(t, m.total, "every object closed after Close")
		s := k.Stats()
		require.Equal(t, uint64(m.nextID.Load()), s.Created)
		require.Equal(t, s.Created, s.Closed+s.Detached, "created == closed + detached after Close")
	})
	return k
}

func kacquire(t *testing.T, k *pool.Keyed[string, *kobj], key string) pool.Lease[*kobj] {
	t.Helper()
	l, err := k.Acquire(context.Background(), key)
	require.NoError(t, err)
	require.Equal(t, key, l.Value().key, "an object of the key asked for")
	return l
}

func TestKeyedConfigErrorsNameTheField(t *testing.T) {
	m := newKeyedMgr(1, 1)
	for _, c := range []struct {
		cfg  pool.KeyedConfig
		want string
	}{
		{pool.KeyedConfig{}, "KeyedConfig.MaxSize"},
		{pool.KeyedConfig{MaxSize: 2, MaxSizePerKey: 3}, "KeyedConfig.MaxSizePerKey"},
		{pool.KeyedConfig{MaxSize: 2, PerKey: pool.Config{MinIdle: 3}}, "KeyedConfig.PerKey.MinIdle must be in [0, MaxSizePerKey=2]"},
		{pool.KeyedConfig{MaxSize: 4, PerKey: pool.Config{MinIdle: 2, MaxIdle: 1}}, "KeyedConfig.PerKey.MaxIdle"},
		{pool.KeyedConfig{MaxSize: 4, PerKey: pool.Config{MaxSize: 2}}, "KeyedConfig.PerKey.MaxSize must be 0"},
		{pool.KeyedConfig{MaxSize: 4, PerKey: pool.Config{MaxIdleTime: -1}}, "KeyedConfig.PerKey.MaxIdleTime"},
	} {
		_, err := pool.NewKeyed[string, *kobj](m, c.cfg)
		require.ErrorIs(t, err, pool.ErrInvalidConfig, "%+v", c.cfg)
		require.ErrorContains(t, err, c.want)
	}
	_, err := pool.NewKeyed[string, *kobj](nil, pool.KeyedConfig{MaxSize: 1})
	require.ErrorIs(t, err, pool.ErrInvalidConfig)
}

// TestKeyedMakesRoomByClosingTheLeastRecentlyUsedIdleObject: at the global
// cap, a new key's Acquire closes the idle object of another key that was
// used longest ago, and waits for nothing else (no release comes).
func TestKeyedMakesRoomByClosingTheLeastRecentlyUsedIdleObject(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newKeyedMgr(2, 2)
		k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 2})
		kacquire(t, k, "a").Release()
		time.Sleep(time.Second) // the coarse clocks tick: b is used later than a
		kacquire(t, k, "b").Release()
		time.Sleep(time.Second)
		l := kacquire(t, k, "c")
		synctest.Wait()
		require.Equal(t, []string{"a"}, m.closedKeys(), "the least recently used idle object made the room")
		s := k.Stats()
		require.Equal(t, uint64(1), s.ClosedBy[pool.CloseEvict])
		require.Equal(t, 2, s.Live)
		l.Release()
	})
}

// TestKeyedWaiterTakesTheRoomOfAnObjectReleasedToAKeyNobodyWaitsFor: with
// nothing idle at the cap, a key waits; the object released to another key
// that nobody waits for is closed, and its slot is the waiter's.
func TestKeyedWaiterTakesTheRoomOfAnObjectReleasedToAKeyNobodyWaitsFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newKeyedMgr(1, 1)
		k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 1})
		a := kacquire(t, k, "a")
		got := make(chan pool.Lease[*kobj], 1)
		go func() { got <- kacquire(t, k, "b") }()
		synctest.Wait()
		require.Equal(t, 1, k.Stats().Waiting)
		a.Release()
		b := <-got
		require.Equal(t, []string{"a"}, m.closedKeys())
		require.Equal(t, uint64(1), k.Stats().ClosedBy[pool.CloseEvict])
		b.Release()
	})
}

// serveInTurn queues one waiter per key of keys, in that order, behind an
// object held at the cap of a keyed pool of MaxSize 1, then releases it, and
// returns the keys in the order their waiters were served (each holds its
// object a moment, then releases it).
func serveInTurn(t *testing.T, keys ...string) []string {
	m := newKeyedMgr(1, 1)
	k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 1})
	held := kacquire(t, k, "x")
	var order []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, key := range keys {
		wg.Go(func() {
			l := kacquire(t, k, key)
			mu.Lock()
			order = append(order, key)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			l.Release()
		})
		synctest.Wait() // each queues before the next comes
	}
	require.Equal(t, len(keys), k.Stats().Waiting)
	held.Release()
	wg.Wait()
	return order
}

// TestKeyedWaitersForRoomAreServedInArrivalOrder: waiters for global room
// are served first come, first served, whatever their keys.
func TestKeyedWaitersForRoomAreServedInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		require.Equal(t, []string{"c", "b", "a", "d"}, serveInTurn(t, "c", "b", "a", "d"))
	})
}

// TestKeyedMaxSizePerKeyHoldsWithRoomToSpare: a key at MaxSizePerKey waits
// for its own objects even while the keyed pool has room, and does not take
// that room from other keys.
func TestKeyedMaxSizePerKeyHoldsWithRoomToSpare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newKeyedMgr(4, 2)
		k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 4, MaxSizePerKey: 2})
		a1, a2 := kacquire(t, k, "a"), kacquire(t, k, "a")
		got := make(chan pool.Lease[*kobj], 1)
		go func() { got <- kacquire(t, k, "a") }()
		synctest.Wait()
		b := kacquire(t, k, "b") // room for b although a's third waits
		select {
		case l := <-got:
			l.Release()
			t.Fatal("a third object of key a")
		default:
		}
		first := a1.Value()
		a1.Release()
		a3 := <-got
		require.Same(t, first, a3.Value(), "the waiter got a's own released object")
		a2.Release()
		a3.Release()
		b.Release()
		as, ok := k.KeyStats("a")
		require.True(t, ok)
		require.Equal(t, 2, as.MaxSize)
		require.Equal(t, uint64(2), as.Created)
	})
}

// TestKeyedKeyStateIsDroppedOnceEmpty: memory follows the live objects and
// waiters, not the keys ever seen (100,000 keys over the run; fewer under
// the race detector), and the
// totals keep the counts of dropped keys.
func TestKeyedKeyStateIsDroppedOnceEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) { testKeyedKeyStateIsDroppedOnceEmpty(t) })
}

func testKeyedKeyStateIsDroppedOnceEmpty(t *testing.T) {
	m := newKeyedMgr(8, 8)
	k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 8, PerKey: pool.Config{MaxIdleTime: time.Hour}})
	const keys = churnKeys
	for i := range keys {
		l := kacquire(t, k, fmt.Sprintf("key-%d", i))
		if i%2 == 0 {
			l.Destroy() // its key drops once the close returns
		} else {
			l.Release() // its key drops when evicted for room
		}
		if i%100 == 0 {
			synctest.Wait() // the closes under way return
			s := k.Stats()
			require.LessOrEqual(t, k.Len(), s.Live+s.Waiting, "keys with state at key %d", i)
			require.LessOrEqual(t, s.Live, 8)
		}
	}
	s := k.Stats()
	require.Equal(t, uint64(keys), s.Acquires)
	require.Equal(t, uint64(keys), s.Created)
	require.LessOrEqual(t, s.Live, 8)
	require.GreaterOrEqual(t, s.ClosedBy[pool.CloseEvict], uint64(keys/2-8))
}

// TestKeyedFailedAcquireLeavesNoKeyState: an Acquire that ends without an
// object leaves no state behind for its key.
func TestKeyedFailedAcquireLeavesNoKeyState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newKeyedMgr(1, 1)
		m.connect = func(context.Context, string) error { return errFake }
		k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 1})
		_, err := k.Acquire(context.Background(), "a")
		require.ErrorIs(t, err, errFake)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = k.Acquire(ctx, "b")
		require.ErrorIs(t, err, context.Canceled)
		require.Zero(t, k.Len())
	})
}

// TestKeyedWarmResetAndClose: Warm fills the keys it is given, ResetKey
// closes one key's objects, Reset every key's, RangeKeys visits the keys
// with state, and Close ends waiters and Acquires.
func TestKeyedWarmResetAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newKeyedMgr(8, 4)
		k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 8, MaxSizePerKey: 4})
		require.NoError(t, k.Warm(context.Background(), "a", "b"))
		synctest.Wait()
		for _, key := range []string{"a", "b"} {
			s, ok := k.KeyStats(key)
			require.True(t, ok)
			require.Equal(t, 1, s.Live, "Warm made max(PerKey.MinIdle, 1) objects of key %s", key)
		}
		k.ResetKey("a")
		synctest.Wait()
		require.Equal(t, uint64(1), k.Stats().ClosedBy[pool.CloseReset], "a's object closed")
		_, ok := k.KeyStats("a")
		require.False(t, ok, "a's state dropped with its last object")
		bs, _ := k.KeyStats("b")
		require.Equal(t, 1, bs.Live, "b's object kept")
		k.Reset()
		synctest.Wait()
		require.Equal(t, uint64(2), k.Stats().ClosedBy[pool.CloseReset], "every key's objects closed")
		require.Zero(t, k.Len())

		kacquire(t, k, "a").Release()
		kacquire(t, k, "b").Release()
		seen := map[string]bool{}
		k.RangeKeys(func(key string, s pool.Stats) bool { seen[key] = s.Idle == 1; return true })
		require.Equal(t, map[string]bool{"a": true, "b": true}, seen)

		held := []pool.Lease[*kobj]{kacquire(t, k, "c"), kacquire(t, k, "c"), kacquire(t, k, "c"), kacquire(t, k, "c")}
		errc := make(chan error, 1)
		go func() { _, err := k.Acquire(context.Background(), "c"); errc <- err }()
		synctest.Wait()
		closed := make(chan error, 1)
		go func() { closed <- k.Close(context.Background()) }()
		require.ErrorIs(t, <-errc, pool.ErrClosed)
		_, err := k.Acquire(context.Background(), "d")
		require.ErrorIs(t, err, pool.ErrClosed)
		for _, l := range held {
			l.Release()
		}
		require.NoError(t, <-closed)
	})
}

// TestKeyedAcquireReleaseZeroAllocs: the hot path on a key with an idle
// object allocates nothing.
func TestKeyedAcquireReleaseZeroAllocs(t *testing.T) {
	m := newKeyedMgr(4, 4)
	k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 4})
	kacquire(t, k, "a").Release()
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		l, err := k.Acquire(ctx, "a")
		if err != nil {
			panic(err)
		}
		l.Release()
	})
	require.Zero(t, allocs)
}

// TestStatsAddCoversEveryField: a keyed pool's totals sum every figure of
// Stats but MaxSize; a field added to Stats and not to the sum fails here.
func TestStatsAddCoversEveryField(t *testing.T) {
	var one pool.Stats
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			f.SetInt(1)
		case reflect.Uint64:
			f.SetUint(1)
		case reflect.Array:
			for j := range f.Len() {
				f.Index(j).SetUint(1)
			}
		default:
			t.Fatalf("Stats.%s: a kind the test does not know", v.Type().Field(i).Name)
		}
	}
	sum := pool.AddStats(one, one)
	s := reflect.ValueOf(sum)
	for i := range s.NumField() {
		name := v.Type().Field(i).Name
		f := s.Field(i)
		want := uint64(2)
		if name == "MaxSize" {
			want = 1 // the keyed pool's own, not a sum
		}
		switch f.Kind() {
		case reflect.Int, reflect.Int64:
			require.Equal(t, int64(want), f.Int(), name)
		case reflect.Uint64:
			require.Equal(t, want, f.Uint(), name)
		case reflect.Array:
			for j := range f.Len() {
				require.Equal(t, want, f.Index(j).Uint(), "%s[%d]", name, j)
			}
		}
	}
}

// TestKeyedStress runs Zipf-distributed keys from many goroutines against a
// budget that binds, with failing connects, destroyed objects and cancelled
// Acquires, and checks DESIGN.md's keyed invariants: the global and per-key
// limits hold at every connect (the manager's counts), no object has two
// holders, none is lost (after Close every object made is closed), and no
// waiter without a deadline is left waiting (a lost wake-up hangs it).
func TestKeyedStress(t *testing.T) {
	const (
		workers = 32
		keys    = 24
		ops     = keyedStress
	)
	m := newKeyedMgr(6, 3)
	var connects atomic.Int64
	m.connect = func(ctx context.Context, _ string) error {
		if connects.Add(1)%7 == 0 {
			return errFake
		}
		if rand.IntN(4) == 0 {
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
		}
		return nil
	}
	k := newKeyed(t, m, pool.KeyedConfig{MaxSize: 6, MaxSizePerKey: 3, PerKey: pool.Config{MaxIdle: 2, MaxUses: 50}})
	zipf := func(r *rand.Rand) string {
		// P(key i) ∝ 1/(i+1): a few hot keys and a long tail.
		for {
			i := r.IntN(keys)
			if r.Float64() < 1/float64(i+1) {
				return fmt.Sprintf("k%02d", i)
			}
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range ops {
				key := zipf(r)
				ctx, cancel := context.Background(), context.CancelFunc(func() {})
				if r.IntN(4) != 0 { // the others wait for good: a lost wake-up hangs them
					ctx, cancel = context.WithTimeout(ctx, time.Duration(r.IntN(3000))*time.Microsecond)
				}
				l, err := k.Acquire(ctx, key)
				cancel()
				if err != nil {
					if !errors.Is(err, errFake) && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("Acquire: %v", err)
					}
					continue
				}
				o := l.Value()
				if o.key != key {
					t.Errorf("an object of key %s for key %s", o.key, key)
				}
				if o.inUse.Swap(true) {
					t.Errorf("object %d has two holders", o.id)
				}
				if r.IntN(8) == 0 {
					time.Sleep(time.Duration(r.IntN(100)) * time.Microsecond)
				}
				o.inUse.Store(false)
				switch r.IntN(20) {
				case 0:
					l.Destroy()
				default:
					l.Release()
				}
			}
		})
	}
	hung := time.AfterFunc(2*time.Minute, func() {
		panic(fmt.Sprintf("keyed stress: a waiter without deadline still waits after 2 minutes: %+v", k.Stats()))
	})
	wg.Wait()
	hung.Stop()
	s := k.Stats()
	require.LessOrEqual(t, s.Live, 6)
	require.Equal(t, s.Created-s.Closed-s.Detached, uint64(s.Live-s.Connecting), "slot counts agree")
	t.Logf("acquires %d, created %d, evicted %d, waits %d, timeouts %d, keys with state %d, peak objects %d",
		s.Acquires, s.Created, s.ClosedBy[pool.CloseEvict], s.Waits, s.Timeouts, k.Len(), m.peak)
}
