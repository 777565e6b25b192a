package poolprom_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/poolprom"
	"github.com/poolkit/poolkit/internal/testutil/pooltest"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// flatten gathers reg into one value per series, named as the text format
// names them: name{label="value",…}, a histogram as its _bucket{le}, _sum
// and _count series.
func flatten(t *testing.T, reg prometheus.Gatherer) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			series := func(suffix string, v float64, extra ...*dto.LabelPair) {
				var ls []string
				for _, l := range append(slices.Clone(m.GetLabel()), extra...) {
					ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
				sort.Strings(ls)
				name := f.GetName() + suffix + "{" + strings.Join(ls, ",") + "}"
				_, dup := out[name]
				require.False(t, dup, "%s twice", name)
				out[name] = v
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				series("", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				series("", m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					le := fmt.Sprint(b.GetUpperBound())
					series("_bucket", float64(b.GetCumulativeCount()), &dto.LabelPair{Name: ptr("le"), Value: &le})
				}
				series("_bucket", float64(h.GetSampleCount()), &dto.LabelPair{Name: ptr("le"), Value: ptr("+Inf")})
				series("_sum", h.GetSampleSum())
				series("_count", float64(h.GetSampleCount()))
			default:
				t.Fatalf("%s: type %v", f.GetName(), f.GetType())
			}
		}
	}
	return out
}

func ptr[V any](v V) *V { return &v }

// keysOf returns the values of the label key on the series of flat.
func keysOf(flat map[string]float64) map[string]bool {
	keys := map[string]bool{}
	for name := range flat {
		if _, rest, ok := strings.Cut(name, `key="`); ok {
			v, _, _ := strings.Cut(rest, `"`)
			keys[v] = true
		}
	}
	return keys
}

// gatherKeyed registers a keyed collector of k with o on a pedantic
// registry and returns its series.
func gatherKeyed(t *testing.T, k *pool.Keyed[string, int], o poolprom.KeyedOptions[string]) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(poolprom.NewKeyedCollector(k, o)))
	return flatten(t, reg)
}

// snapshot is a PoolStatser of one fixed snapshot.
type snapshot pool.Stats

func (s snapshot) Stats() pool.Stats { return pool.Stats(s) }

// By default a keyed collector exports the keyed pool's totals, k.Stats()
// (the counts of a dropped key's state included), as a pool collector
// exports a pool's: the same series, labels and values, and no per-key
// series.
func TestKeyedCollectorExportsTheTotalsByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := pooltest.NewKeyed(t)
		pooltest.Hold(t, k, "a", 2)
		pooltest.Hold(t, k, "b", 1)
		pooltest.Hold(t, k, "c", 3).Destroy()
		_, ok := k.KeyStats("c")
		require.False(t, ok, "c's state was dropped")

		got := gatherKeyed(t, k, poolprom.KeyedOptions[string]{})
		s := k.Stats()
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(poolprom.NewPoolCollector(snapshot(s), poolprom.Options{ConstLabels: prometheus.Labels{"pool": "tenants"}}))
		require.Equal(t, flatten(t, reg), got)
		require.Empty(t, keysOf(got))
		require.Equal(t, 6.0, got[`poolkit_pool_acquires_total{pool="tenants"}`], "a's, b's and the dropped c's")
		require.Equal(t, 3.0, got[`poolkit_pool_connections_closed_total{pool="tenants",reason="destroy"}`])
		require.Equal(t, 64.0, got[`poolkit_pool_max_connections{pool="tenants"}`], "the keyed pool's MaxSize")
	})
}

// Options.PerKey adds each key's series, named by KeyName, beside the
// totals (which stay as they are), 56 series a key as the doc says; each
// key's are its KeyStats.
func TestKeyedCollectorExportsKeysOnlyWithPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := pooltest.NewKeyed(t)
		pooltest.Hold(t, k, "a", 2)
		pooltest.Hold(t, k, "b", 1)
		totals := gatherKeyed(t, k, poolprom.KeyedOptions[string]{})

		got := gatherKeyed(t, k, poolprom.KeyedOptions[string]{PerKey: true, KeyName: strings.ToUpper})
		require.Equal(t, map[string]bool{"A": true, "B": true}, keysOf(got))
		perKey := map[string]int{}
		for name := range got {
			if strings.HasPrefix(name, "poolkit_pool_key_") {
				perKey[keyOf(name)]++
				delete(got, name)
			}
		}
		require.Equal(t, totals, got, "the totals are the same with PerKey")
		require.Equal(t, map[string]int{"A": 56, "B": 56}, perKey)

		got = gatherKeyed(t, k, poolprom.KeyedOptions[string]{PerKey: true})
		a, _ := k.KeyStats("a")
		for name, want := range map[string]float64{
			`poolkit_pool_key_connections{key="a",pool="tenants",state="used"}`:      float64(a.Leased),
			`poolkit_pool_key_connections{key="b",pool="tenants",state="used"}`:      1,
			`poolkit_pool_key_acquires_total{key="a",pool="tenants"}`:                float64(a.Acquires),
			`poolkit_pool_key_connects_total{key="a",pool="tenants"}`:                float64(a.Connects),
			`poolkit_pool_key_blocked_acquire_seconds_count{key="a",pool="tenants"}`: float64(a.Blocked),
		} {
			require.Equal(t, want, got[name], name)
		}
		require.Equal(t, 2, a.Leased)
		require.NotContains(t, got, `poolkit_pool_key_max_connections{key="a",pool="tenants"}`)
	})
}

func keyOf(series string) string {
	_, rest, _ := strings.Cut(series, `key="`)
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// With more keys than MaxKeys, the MaxKeys with the most live objects are
// exported, ties broken by name, and the rest are one series, key="other",
// whose every value (gauges, counters, histogram) is the sum of the rest's
// series as a collector without the bound exports them.
func TestKeyedCollectorBoundsTheKeys(t *testing.T) {
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

		all := gatherKeyed(t, k, poolprom.KeyedOptions[string]{PerKey: true, MaxKeys: 100})
		require.Len(t, keysOf(all), 50)
		got := gatherKeyed(t, k, poolprom.KeyedOptions[string]{PerKey: true, MaxKeys: 10})
		top := []string{"key-03", "key-13", "key-23", "key-33", "key-43", "key-00", "key-01", "key-02", "key-04", "key-05"}
		want := map[string]bool{"other": true}
		for _, key := range top {
			want[key] = true
		}
		require.Equal(t, want, keysOf(got))

		other := map[string]float64{}
		for name, v := range all {
			key := keyOf(name)
			if key == "" {
				require.Equal(t, v, got[name], "the totals: %s", name)
				continue
			}
			if want[key] {
				require.Equal(t, v, got[name], "an exported key's: %s", name)
				continue
			}
			folded := strings.Replace(name, `key="`+key+`"`, `key="other"`, 1)
			other[folded] += v
		}
		for name, v := range got {
			if keyOf(name) == "other" {
				require.Equal(t, other[name], v, name)
				delete(other, name)
			}
		}
		require.Empty(t, other, "series of the rest that the fold lacks")
		require.Equal(t, 40.0, got[`poolkit_pool_key_connections{key="other",pool="tenants",state="used"}`])
	})
}

// A key whose state is dropped has no series from the next scrape on; the
// fold's gauges lose a dropped key's figures, its counters keep them (they
// do not fall); with no more keys than MaxKeys there is no fold.
func TestKeyedCollectorDropsTheSeriesOfADroppedKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := pooltest.NewKeyed(t)
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(poolprom.NewKeyedCollector(k, poolprom.KeyedOptions[string]{PerKey: true, MaxKeys: 2}))
		pooltest.Hold(t, k, "a", 3)
		b := pooltest.Hold(t, k, "b", 2)
		c := pooltest.Hold(t, k, "c", 1)
		d := pooltest.Hold(t, k, "d", 1)
		const (
			otherUsed     = `poolkit_pool_key_connections{key="other",pool="tenants",state="used"}`
			otherAcquires = `poolkit_pool_key_acquires_total{key="other",pool="tenants"}`
		)
		got := flatten(t, reg)
		require.Equal(t, map[string]bool{"a": true, "b": true, "other": true}, keysOf(got))
		require.Equal(t, 2.0, got[otherUsed])
		require.Equal(t, 2.0, got[otherAcquires])

		d.Destroy()
		got = flatten(t, reg)
		require.Equal(t, map[string]bool{"a": true, "b": true, "other": true}, keysOf(got))
		require.Equal(t, 1.0, got[otherUsed], "d's object is gone")
		require.Equal(t, 2.0, got[otherAcquires], "d's acquire still counted")

		b.Destroy()
		got = flatten(t, reg)
		require.Equal(t, map[string]bool{"a": true, "c": true}, keysOf(got), "b dropped; c back on its own, no fold")

		c.Destroy()
		got = flatten(t, reg)
		require.Equal(t, map[string]bool{"a": true}, keysOf(got))
		require.Equal(t, 7.0, got[`poolkit_pool_acquires_total{pool="tenants"}`], "the totals keep every key's counts")
	})
}

// Keys whose names are equal share one series, their figures summed; a key
// named "other" is in the fold when there is one, so no series is sent
// twice (flatten and the registry would fail).
func TestKeyedCollectorSumsKeysOfOneName(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := pooltest.NewKeyed(t)
		pooltest.Hold(t, k, "a1", 2)
		pooltest.Hold(t, k, "a2", 1)
		pooltest.Hold(t, k, "other", 5)
		pooltest.Hold(t, k, "b", 1)
		pooltest.Hold(t, k, "c", 1)
		name := func(key string) string { return strings.TrimRight(key, "0123456789") }

		got := gatherKeyed(t, k, poolprom.KeyedOptions[string]{PerKey: true, KeyName: name})
		require.Equal(t, map[string]bool{"a": true, "b": true, "c": true, "other": true}, keysOf(got))
		require.Equal(t, 3.0, got[`poolkit_pool_key_connections{key="a",pool="tenants",state="used"}`])
		require.Equal(t, 5.0, got[`poolkit_pool_key_connections{key="other",pool="tenants",state="used"}`], "no fold: other is a key")

		got = gatherKeyed(t, k, poolprom.KeyedOptions[string]{PerKey: true, KeyName: name, MaxKeys: 2})
		require.Equal(t, map[string]bool{"a": true, "b": true, "other": true}, keysOf(got),
			"the key other is folded, though it has the most objects")
		require.Equal(t, 6.0, got[`poolkit_pool_key_connections{key="other",pool="tenants",state="used"}`], "the key other and c")
	})
}

// A keyed collector, PerKey or not, registers beside pool collectors of
// the same registry: the totals have their label names, and the per-key
// series names of their own.
func TestKeyedCollectorRegistersBesidePoolCollectors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := pool.New[int](manager.Funcs[int]{ConnectFunc: func(context.Context) (int, error) { return 1, nil }},
			pool.Config{Name: "db", MaxSize: 3})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })
		k := pooltest.NewKeyed(t)
		pooltest.Hold(t, k, "a", 1)

		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(poolprom.NewPoolCollector(p, poolprom.Options{})))
		require.NoError(t, reg.Register(poolprom.NewKeyedCollector(k, poolprom.KeyedOptions[string]{PerKey: true})))
		got := flatten(t, reg)
		require.Equal(t, 3.0, got[`poolkit_pool_max_connections{pool="db"}`])
		require.Equal(t, 64.0, got[`poolkit_pool_max_connections{pool="tenants"}`])
		require.Equal(t, 1.0, got[`poolkit_pool_key_connections{key="a",pool="tenants",state="used"}`])
	})
}

// A negative MaxKeys makes the registration fail, naming the field.
func TestKeyedCollectorRejectsANegativeMaxKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := pooltest.NewKeyed(t)
		err := prometheus.NewPedanticRegistry().Register(poolprom.NewKeyedCollector(k, poolprom.KeyedOptions[string]{MaxKeys: -1}))
		require.ErrorContains(t, err, "poolprom: KeyedOptions.MaxKeys must be >= 0, got -1")
	})
}

// BenchmarkKeyedCollectorCollect times one scrape of a keyed pool whose
// keys each hold one object: the totals alone (PerKey=false, the baseline)
// against PerKey with the default bound.
func BenchmarkKeyedCollectorCollect(b *testing.B) {
	for _, keys := range []int{20, 1000} {
		k, err := pool.NewKeyed[string, int](manager.KeyedFuncs[string, int]{
			ConnectFunc: func(context.Context, string) (int, error) { return 1, nil },
		}, pool.KeyedConfig{MaxSize: keys, PerKey: pool.Config{Name: "tenants"}})
		require.NoError(b, err)
		var leases []pool.Lease[int]
		for i := range keys {
			l, err := k.Acquire(context.Background(), fmt.Sprintf("key-%d", i))
			require.NoError(b, err)
			leases = append(leases, l)
		}
		for _, perKey := range []bool{false, true} {
			b.Run(fmt.Sprintf("Keys=%d/PerKey=%v", keys, perKey), func(b *testing.B) {
				c := poolprom.NewKeyedCollector(k, poolprom.KeyedOptions[string]{PerKey: perKey})
				ch := make(chan prometheus.Metric, 1024)
				done := make(chan struct{})
				go func() {
					for range ch {
					}
					close(done)
				}()
				b.ReportAllocs()
				for b.Loop() {
					c.Collect(ch)
				}
				close(ch)
				<-done
			})
		}
		for _, l := range leases {
			l.Release()
		}
		require.NoError(b, k.Close(context.Background()))
	}
}
