package poolotel_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/poolotel"
	"github.com/poolkit/poolkit/internal/testutil/pooltest"
	"github.com/poolkit/poolkit/pool"
)

// observeKeyed observes k with opt on a reader of its own and returns what
// one collection reads.
func observeKeyed(t *testing.T, k *pool.Keyed[string, int], opt poolotel.KeyedOptions[string]) map[string]point {
	t.Helper()
	reader, mp := newReader(t)
	reg, err := poolotel.ObserveKeyed(mp.Meter("test"), k, opt)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, reg.Unregister()) })
	return collect(t, reader, poolotel.PoolNameKey, pooltest.KeyedName)
}

// keyOf returns the value of poolotel.KeyNameKey in a point's name made by
// collect, "" if it has none.
func keyOf(point string) string {
	_, rest, ok := strings.Cut(point, " "+string(poolotel.KeyNameKey)+"=")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, " ")
	return v
}

func keysOf(points map[string]point) map[string]bool {
	keys := map[string]bool{}
	for name := range points {
		if key := keyOf(name); key != "" {
			keys[key] = true
		}
	}
	return keys
}

// snapshot is a PoolStatser of one fixed snapshot.
type snapshot pool.Stats

func (s snapshot) Stats() pool.Stats { return pool.Stats(s) }

// By default ObserveKeyed measures the keyed pool's totals, k.Stats() (the
// counts of a dropped key's state included), as ObservePool measures a
// pool's: the same instruments, attributes and values, the keyed pool's
// name taken from it, and no per-key points.
func TestObserveKeyedMeasuresTheTotalsByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := pooltest.NewKeyed(t)
		pooltest.Hold(t, k, "a", 2)
		pooltest.Hold(t, k, "b", 1)
		pooltest.Hold(t, k, "c", 3).Destroy()
		_, ok := k.KeyStats("c")
		require.False(t, ok, "c's state was dropped")

		got := observeKeyed(t, k, poolotel.KeyedOptions[string]{})
		reader, mp := newReader(t)
		reg, err := poolotel.ObservePool(mp.Meter("test"), snapshot(k.Stats()), poolotel.Options{Name: pooltest.KeyedName})
		require.NoError(t, err)
		defer func() { require.NoError(t, reg.Unregister()) }()
		require.Equal(t, collect(t, reader, poolotel.PoolNameKey, pooltest.KeyedName), got)
		require.Empty(t, keysOf(got))
		require.Equal(t, 6.0, got["poolkit.pool.acquires"].value, "a's, b's and the dropped c's")
		require.Equal(t, 3.0, got["poolkit.pool.connection.closed poolkit.pool.close.reason=destroy"].value)
		require.Equal(t, float64(pooltest.KeyedMaxSize), got["db.client.connection.max"].value, "the keyed pool's MaxSize")
	})
}

// Options.PerKey adds each key's points, named by KeyName, on twin
// instruments beside the totals (which stay as they are), 31 points a key
// as the doc says; each key's are its KeyStats.
func TestObserveKeyedMeasuresKeysOnlyWithPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := pooltest.NewKeyed(t)
		pooltest.Hold(t, k, "a", 2)
		pooltest.Hold(t, k, "b", 1)
		totals := observeKeyed(t, k, poolotel.KeyedOptions[string]{})

		got := observeKeyed(t, k, poolotel.KeyedOptions[string]{PerKey: true, KeyName: strings.ToUpper})
		require.Equal(t, map[string]bool{"A": true, "B": true}, keysOf(got))
		perKey := map[string]int{}
		for name := range got {
			if strings.HasPrefix(name, "poolkit.pool.key.") {
				perKey[keyOf(name)]++
				delete(got, name)
			}
		}
		require.Equal(t, totals, got, "the totals are the same with PerKey")
		require.Equal(t, map[string]int{"A": 31, "B": 31}, perKey)

		got = observeKeyed(t, k, poolotel.KeyedOptions[string]{PerKey: true})
		a, _ := k.KeyStats("a")
		up, mono := false, true
		for name, want := range map[string]point{
			"poolkit.pool.key.connection.count db.client.connection.state=used poolkit.pool.key.name=a": {float64(a.Leased), up, "{connection}"},
			"poolkit.pool.key.connection.count db.client.connection.state=used poolkit.pool.key.name=b": {1, up, "{connection}"},
			"poolkit.pool.key.connection.pending_requests poolkit.pool.key.name=a":                      {0, up, "{request}"},
			"poolkit.pool.key.acquires poolkit.pool.key.name=a":                                         {float64(a.Acquires), mono, "{acquire}"},
			"poolkit.pool.key.connects poolkit.pool.key.name=a":                                         {float64(a.Connects), mono, "{connect}"},
			"poolkit.pool.key.blocked.time poolkit.pool.key.name=a":                                     {a.BlockedTime.Seconds(), mono, "s"},
		} {
			require.Equal(t, want, got[name], name)
		}
		require.Equal(t, 2, a.Leased)
		require.NotContains(t, got, "poolkit.pool.key.connection.max poolkit.pool.key.name=a")
	})
}

// With more keys than MaxKeys, the MaxKeys with the most live objects are
// measured, ties broken by name, and the rest are one key, "other", whose
// every point is the sum of the rest's as ObserveKeyed measures them
// without the bound.
func TestObserveKeyedBoundsTheKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := pooltest.NewKeyed(t)
		for i := range 50 {
			n := 1
			if i%10 == 3 {
				n = 3 // key-03, key-13, …, key-43: the most live objects
			}
			pooltest.Hold(t, k, fmt.Sprintf("key-%02d", i), n)
		}
		require.Equal(t, 50, k.Len())

		all := observeKeyed(t, k, poolotel.KeyedOptions[string]{PerKey: true, MaxKeys: 100})
		require.Len(t, keysOf(all), 50)
		got := observeKeyed(t, k, poolotel.KeyedOptions[string]{PerKey: true, MaxKeys: 10})
		top := []string{"key-03", "key-13", "key-23", "key-33", "key-43", "key-00", "key-01", "key-02", "key-04", "key-05"}
		want := map[string]bool{"other": true}
		for _, key := range top {
			want[key] = true
		}
		require.Equal(t, want, keysOf(got))

		other := map[string]point{}
		for name, p := range all {
			key := keyOf(name)
			if key == "" || want[key] {
				require.Equal(t, p, got[name], name)
				continue
			}
			folded := strings.Replace(name, "poolkit.pool.key.name="+key, "poolkit.pool.key.name=other", 1)
			o := other[folded]
			o.value += p.value
			o.monotonic, o.unit = p.monotonic, p.unit
			other[folded] = o
		}
		for name, p := range got {
			if keyOf(name) == "other" {
				require.Equal(t, other[name], p, name)
				delete(other, name)
			}
		}
		require.Empty(t, other, "points of the rest that the fold lacks")
		require.Equal(t, 40.0, got["poolkit.pool.key.connection.count db.client.connection.state=used poolkit.pool.key.name=other"].value)
	})
}

// A key whose state is dropped is not measured from the next collection
// on; the fold's UpDownCounters lose a dropped key's figures, its Counters
// keep them (they do not fall); with no more keys than MaxKeys there is no
// fold; after Unregister nothing is measured.
func TestObserveKeyedDropsTheKeyOfADroppedState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := pooltest.NewKeyed(t)
		reader, mp := newReader(t)
		reg, err := poolotel.ObserveKeyed(mp.Meter("test"), k, poolotel.KeyedOptions[string]{PerKey: true, MaxKeys: 2})
		require.NoError(t, err)
		read := func() map[string]point { return collect(t, reader, poolotel.PoolNameKey, pooltest.KeyedName) }
		pooltest.Hold(t, k, "a", 3)
		b := pooltest.Hold(t, k, "b", 2)
		c := pooltest.Hold(t, k, "c", 1)
		d := pooltest.Hold(t, k, "d", 1)
		const (
			otherUsed     = "poolkit.pool.key.connection.count db.client.connection.state=used poolkit.pool.key.name=other"
			otherAcquires = "poolkit.pool.key.acquires poolkit.pool.key.name=other"
		)
		got := read()
		require.Equal(t, map[string]bool{"a": true, "b": true, "other": true}, keysOf(got))
		require.Equal(t, 2.0, got[otherUsed].value)
		require.Equal(t, 2.0, got[otherAcquires].value)

		d.Destroy()
		got = read()
		require.Equal(t, map[string]bool{"a": true, "b": true, "other": true}, keysOf(got))
		require.Equal(t, 1.0, got[otherUsed].value, "d's object is gone")
		require.Equal(t, 2.0, got[otherAcquires].value, "d's acquire still counted")

		b.Destroy()
		got = read()
		require.Equal(t, map[string]bool{"a": true, "c": true}, keysOf(got), "b dropped; c back on its own, no fold")

		c.Destroy()
		got = read()
		require.Equal(t, map[string]bool{"a": true}, keysOf(got))
		require.Equal(t, 7.0, got["poolkit.pool.acquires"].value, "the totals keep every key's counts")

		require.NoError(t, reg.Unregister())
		require.Empty(t, read(), "nothing is measured after Unregister")
	})
}

// Keys whose names are equal share their points, their figures summed; a
// key named "other" is in the fold when there is one.
func TestObserveKeyedSumsKeysOfOneName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := pooltest.NewKeyed(t)
		pooltest.Hold(t, k, "a1", 2)
		pooltest.Hold(t, k, "a2", 1)
		pooltest.Hold(t, k, "other", 5)
		pooltest.Hold(t, k, "b", 1)
		pooltest.Hold(t, k, "c", 1)
		name := func(key string) string { return strings.TrimRight(key, "0123456789") }
		used := func(key string) string {
			return "poolkit.pool.key.connection.count db.client.connection.state=used poolkit.pool.key.name=" + key
		}

		got := observeKeyed(t, k, poolotel.KeyedOptions[string]{PerKey: true, KeyName: name})
		require.Equal(t, map[string]bool{"a": true, "b": true, "c": true, "other": true}, keysOf(got))
		require.Equal(t, 3.0, got[used("a")].value)
		require.Equal(t, 5.0, got[used("other")].value, "no fold: other is a key")

		got = observeKeyed(t, k, poolotel.KeyedOptions[string]{PerKey: true, KeyName: name, MaxKeys: 2})
		require.Equal(t, map[string]bool{"a": true, "b": true, "other": true}, keysOf(got),
			"the key other is folded, though it has the most objects")
		require.Equal(t, 6.0, got[used("other")].value, "the key other and c")
	})
}

// ObserveKeyed needs a name (the keyed pool's, or Options.Name) and a
// MaxKeys that is not negative.
func TestObserveKeyedNeedsANameAndAValidMaxKeys(t *testing.T) {
	_, mp := newReader(t)
	_, err := poolotel.ObserveKeyed(mp.Meter("test"), (*pool.Keyed[string, int])(nil), poolotel.KeyedOptions[string]{})
	require.ErrorContains(t, err, "Options.Name")
	_, err = poolotel.ObserveKeyed(mp.Meter("test"), (*pool.Keyed[string, int])(nil),
		poolotel.KeyedOptions[string]{Options: poolotel.Options{Name: "tenants"}, MaxKeys: -1})
	require.ErrorContains(t, err, "poolotel: KeyedOptions.MaxKeys must be >= 0, got -1")
}
