package poolprom_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/contrib/poolprom"
	"github.com/poolkit/poolkit/internal/testutil/pooltest"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The pool's known state is driven in a synctest bubble, so that the wait
// histogram is exact (see pooltest.DrivePool).
func TestPoolCollectorReportsAPoolInAKnownState(t *testing.T) {
	synctest.Test(t, testPoolCollectorReportsAPoolInAKnownState)
}

func testPoolCollectorReportsAPoolInAKnownState(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	var whileWaiting string
	p := pooltest.DrivePool(t, func(p *pool.Pool[int]) {
		reg.MustRegister(poolprom.NewPoolCollector(p, poolprom.Options{ConstLabels: prometheus.Labels{"pool": "db"}}))
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP poolkit_pool_pending_acquires Acquire calls waiting in line for a connection.
# TYPE poolkit_pool_pending_acquires gauge
poolkit_pool_pending_acquires{pool="db"} 1
`), "poolkit_pool_pending_acquires"))
		whileWaiting = "checked"
	})
	require.Equal(t, "checked", whileWaiting)

	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP poolkit_pool_acquires_total Successful Acquire and TryAcquire calls.
# TYPE poolkit_pool_acquires_total counter
poolkit_pool_acquires_total{pool="db"} 4
# HELP poolkit_pool_cancels_total Waits or connects ended by a cancellation.
# TYPE poolkit_pool_cancels_total counter
poolkit_pool_cancels_total{pool="db"} 1
# HELP poolkit_pool_connect_errors_total Manager.Connect attempts that failed.
# TYPE poolkit_pool_connect_errors_total counter
poolkit_pool_connect_errors_total{pool="db"} 0
# HELP poolkit_pool_connections Connections by state: idle, used (leased), connecting, closing (waiting for or in Manager.Close).
# TYPE poolkit_pool_connections gauge
poolkit_pool_connections{pool="db",state="closing"} 0
poolkit_pool_connections{pool="db",state="connecting"} 0
poolkit_pool_connections{pool="db",state="idle"} 1
poolkit_pool_connections{pool="db",state="used"} 1
# HELP poolkit_pool_connections_closed_total Connections closed (Manager.Close returned), by reason.
# TYPE poolkit_pool_connections_closed_total counter
poolkit_pool_connections_closed_total{pool="db",reason="destroy"} 1
poolkit_pool_connections_closed_total{pool="db",reason="evict"} 0
poolkit_pool_connections_closed_total{pool="db",reason="evict_hot"} 0
poolkit_pool_connections_closed_total{pool="db",reason="evict_surplus"} 0
poolkit_pool_connections_closed_total{pool="db",reason="health_check"} 0
poolkit_pool_connections_closed_total{pool="db",reason="idle"} 0
poolkit_pool_connections_closed_total{pool="db",reason="lifetime"} 0
poolkit_pool_connections_closed_total{pool="db",reason="max_idle"} 0
poolkit_pool_connections_closed_total{pool="db",reason="pool_closed"} 0
poolkit_pool_connections_closed_total{pool="db",reason="recycle"} 0
poolkit_pool_connections_closed_total{pool="db",reason="release_check"} 0
poolkit_pool_connections_closed_total{pool="db",reason="reset"} 0
poolkit_pool_connections_closed_total{pool="db",reason="shrink"} 0
poolkit_pool_connections_closed_total{pool="db",reason="uses"} 0
# HELP poolkit_pool_connections_created_total Connections made (successful connects).
# TYPE poolkit_pool_connections_created_total counter
poolkit_pool_connections_created_total{pool="db"} 3
# HELP poolkit_pool_connections_detached_total Connections taken out of the pool by Lease.Detach.
# TYPE poolkit_pool_connections_detached_total counter
poolkit_pool_connections_detached_total{pool="db"} 0
# HELP poolkit_pool_health_checks_total Background health checks run.
# TYPE poolkit_pool_health_checks_total counter
poolkit_pool_health_checks_total{pool="db"} 0
# HELP poolkit_pool_leaks_total Leases held longer than LeakThreshold (each reported once).
# TYPE poolkit_pool_leaks_total counter
poolkit_pool_leaks_total{pool="db"} 0
# HELP poolkit_pool_connects_total Manager.Connect attempts.
# TYPE poolkit_pool_connects_total counter
poolkit_pool_connects_total{pool="db"} 3
# HELP poolkit_pool_max_connections The most connections the pool may hold (MaxSize).
# TYPE poolkit_pool_max_connections gauge
poolkit_pool_max_connections{pool="db"} 2
# HELP poolkit_pool_pending_acquires Acquire calls waiting in line for a connection.
# TYPE poolkit_pool_pending_acquires gauge
poolkit_pool_pending_acquires{pool="db"} 0
# HELP poolkit_pool_timeouts_total Waits or connects ended by a deadline.
# TYPE poolkit_pool_timeouts_total counter
poolkit_pool_timeouts_total{pool="db"} 1
# HELP poolkit_pool_waits_total Acquire calls that waited in line.
# TYPE poolkit_pool_waits_total counter
poolkit_pool_waits_total{pool="db"} 3
`),
		"poolkit_pool_acquires_total", "poolkit_pool_cancels_total", "poolkit_pool_connect_errors_total",
		"poolkit_pool_connections", "poolkit_pool_connections_closed_total", "poolkit_pool_connections_created_total",
		"poolkit_pool_connections_detached_total", "poolkit_pool_connects_total", "poolkit_pool_max_connections",
		"poolkit_pool_pending_acquires", "poolkit_pool_timeouts_total", "poolkit_pool_waits_total",
		"poolkit_pool_health_checks_total", "poolkit_pool_leaks_total"))

	s := p.Stats()
	families, err := reg.Gather()
	require.NoError(t, err)
	var sawBlocked bool
	for _, f := range families {
		switch f.GetName() {
		case "poolkit_pool_blocked_acquire_seconds":
			// Blocked: a and b (connects), the timed-out and the cancelled
			// waits, d (waited, then connected); c took an idle one.
			sawBlocked = true
			h := f.GetMetric()[0].GetHistogram()
			require.EqualValues(t, 5, h.GetSampleCount())
			require.Equal(t, s.BlockedTime.Seconds(), h.GetSampleSum())
			require.Len(t, h.GetBucket(), len(s.WaitBuckets))
			for i, b := range h.GetBucket() {
				require.Equal(t, (time.Microsecond << i).Seconds(), b.GetUpperBound())
				require.Equal(t, s.WaitBuckets[i], b.GetCumulativeCount())
			}
			// The four instant waits are in the first bucket; the timed-out
			// one, 5 ms, in the first bucket above 4.096 ms.
			require.Equal(t, uint64(4), s.WaitBuckets[0])
			require.Equal(t, uint64(4), s.WaitBuckets[12], "at or below %v", time.Microsecond<<12)
			require.Equal(t, uint64(5), s.WaitBuckets[13], "at or below %v", time.Microsecond<<13)
		}
	}
	require.True(t, sawBlocked)
}

// With GOMAXPROCS 1 every Get and Put runs on the one P: the sources of the
// Gets are known.
func TestBytesCollectorReportsAPoolInAKnownState(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	bp := pooltest.DriveBytes(t)

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(poolprom.NewBytesCollector(bp, poolprom.Options{Namespace: "svc", PerClass: true}))
	s := bp.Stats()
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP svc_bytepool_class_buffers Buffers kept for reuse, per size class (size in bytes).
# TYPE svc_bytepool_class_buffers gauge
svc_bytepool_class_buffers{size="64"} 0
svc_bytepool_class_buffers{size="80"} 0
svc_bytepool_class_buffers{size="96"} 0
svc_bytepool_class_buffers{size="112"} 0
svc_bytepool_class_buffers{size="128"} 1
# HELP svc_bytepool_drops_total Put calls whose buffer was not kept.
# TYPE svc_bytepool_drops_total counter
svc_bytepool_drops_total 1
# HELP svc_bytepool_gets_total Get calls, by how they were served: the caller's per-P tiers (local), the exchange, another P's spill (steal), a new class buffer (alloc), or a plain allocation above MaxSize (oversize).
# TYPE svc_bytepool_gets_total counter
svc_bytepool_gets_total{source="alloc"} 1
svc_bytepool_gets_total{source="exchange"} 0
svc_bytepool_gets_total{source="local"} 1
svc_bytepool_gets_total{source="oversize"} 1
svc_bytepool_gets_total{source="steal"} 0
# HELP svc_bytepool_retained_bytes Bytes kept for reuse.
# TYPE svc_bytepool_retained_bytes gauge
svc_bytepool_retained_bytes 128
`), "svc_bytepool_class_buffers", "svc_bytepool_drops_total", "svc_bytepool_gets_total", "svc_bytepool_retained_bytes"))

	for name, want := range map[string]float64{
		"svc_bytepool_max_retained_bytes":   float64(s.MaxRetained),
		"svc_bytepool_alloc_failures_total": 0,
		"svc_bytepool_parked_total":         float64(s.Parked),
		"svc_bytepool_released_total":       0,
	} {
		got, err := testutil.GatherAndCount(reg, name)
		require.NoError(t, err)
		require.Equal(t, 1, got, name)
		require.Equal(t, want, gathered(t, reg, name), name)
	}
	require.Positive(t, s.MaxRetained)
}

// The per-class series are left out unless Options.PerClass asks for them;
// with it there is one per size class (73 with the default Config, as the
// package doc says), and the other series are the same either way.
func TestBytesCollectorHasPerClassSeriesOnlyWithPerClass(t *testing.T) {
	bp, err := bytepool.New(bytepool.Config{})
	require.NoError(t, err)
	bytepool.Put(bp.Get(1000))
	classes := len(bp.Stats().Classes)
	require.Equal(t, 73, classes)

	total := map[bool]int{}
	for _, perClass := range []bool{false, true} {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(poolprom.NewBytesCollector(bp, poolprom.Options{PerClass: perClass}))
		n, err := testutil.GatherAndCount(reg, "poolkit_bytepool_class_buffers")
		require.NoError(t, err)
		if perClass {
			require.Equal(t, classes, n)
		} else {
			require.Zero(t, n)
		}
		all, err := testutil.GatherAndCount(reg)
		require.NoError(t, err)
		total[perClass] = all - n
	}
	require.Equal(t, total[false], total[true], "series other than the per-class ones")
	require.Positive(t, total[false])
}

// gathered returns the value of the one series of the named metric.
func gathered(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			m := f.GetMetric()[0]
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// A pool's Config.Name is its "pool" label, unless ConstLabels set one.
func TestPoolCollectorLabelsANamedPool(t *testing.T) {
	p, err := pool.New[int](manager.Funcs[int]{ConnectFunc: func(context.Context) (int, error) { return 1, nil }},
		pool.Config{Name: "db", MaxSize: 3})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close(context.Background())) }()
	for _, tc := range []struct {
		labels prometheus.Labels
		want   string
	}{
		{nil, `poolkit_pool_max_connections{pool="db"} 3`},
		{prometheus.Labels{"pool": "primary"}, `poolkit_pool_max_connections{pool="primary"} 3`},
		{prometheus.Labels{"region": "eu"}, `poolkit_pool_max_connections{pool="db",region="eu"} 3`},
	} {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(poolprom.NewPoolCollector(p, poolprom.Options{ConstLabels: tc.labels}))
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP poolkit_pool_max_connections The most connections the pool may hold (MaxSize).
# TYPE poolkit_pool_max_connections gauge
`+tc.want+"\n"), "poolkit_pool_max_connections"))
	}
}

// facade stands for a facade over a pool, such as pgxmanager.Pool: the
// pool's Stats and Name, on a type of its own.
type facade struct{ p *pool.Pool[int] }

func (f facade) Stats() pool.Stats { return f.p.Stats() }
func (f facade) Name() string      { return f.p.Name() }

// unnamedFacade is a facade without a Name method.
type unnamedFacade struct{ p *pool.Pool[int] }

func (f unnamedFacade) Stats() pool.Stats { return f.p.Stats() }

// A facade over a pool is labelled by its Name method, as the pool is, so
// that it registers beside a named keyed collector: a registry refuses one
// metric name with two sets of label names, as it does for a facade
// without a name.
func TestPoolCollectorLabelsANamedFacade(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := pool.New[int](manager.Funcs[int]{ConnectFunc: func(context.Context) (int, error) { return 1, nil }},
			pool.Config{Name: "db", MaxSize: 3})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })
		k := pooltest.NewKeyed(t)

		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(poolprom.NewPoolCollector(facade{p}, poolprom.Options{})))
		require.NoError(t, reg.Register(poolprom.NewKeyedCollector(k, poolprom.KeyedOptions[string]{})))
		require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP poolkit_pool_max_connections The most connections the pool may hold (MaxSize).
# TYPE poolkit_pool_max_connections gauge
poolkit_pool_max_connections{pool="db"} 3
poolkit_pool_max_connections{pool="tenants"} 64
`), "poolkit_pool_max_connections"))

		reg = prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(poolprom.NewPoolCollector(unnamedFacade{p}, poolprom.Options{})))
		err = reg.Register(poolprom.NewKeyedCollector(k, poolprom.KeyedOptions[string]{}))
		require.ErrorContains(t, err, "different label names")
	})
}
