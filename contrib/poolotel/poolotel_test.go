package poolotel_test

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/contrib/poolotel"
	"github.com/poolkit/poolkit/internal/testutil/pooltest"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// point is one collected data point: its value, and whether its
// instrument is a monotonic sum (a Counter).
type point struct {
	value     float64
	monotonic bool
	unit      string
}

// collect reads every data point of reader, keyed by the metric name and
// its attributes other than the pool's name, which it checks.
func collect(t *testing.T, reader *sdkmetric.ManualReader, nameKey attribute.Key, name string) map[string]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]point{}
	key := func(m metricdata.Metrics, set attribute.Set) string {
		v, ok := set.Value(nameKey)
		require.True(t, ok, "%s has no %s", m.Name, nameKey)
		require.Equal(t, name, v.AsString())
		k := m.Name
		for _, kv := range set.ToSlice() {
			if kv.Key != nameKey {
				k += " " + string(kv.Key) + "=" + kv.Value.Emit()
			}
		}
		return k
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				require.Equal(t, metricdata.CumulativeTemporality, d.Temporality, m.Name)
				for _, dp := range d.DataPoints {
					out[key(m, dp.Attributes)] = point{float64(dp.Value), d.IsMonotonic, m.Unit}
				}
			case metricdata.Sum[float64]:
				require.Equal(t, metricdata.CumulativeTemporality, d.Temporality, m.Name)
				for _, dp := range d.DataPoints {
					out[key(m, dp.Attributes)] = point{dp.Value, d.IsMonotonic, m.Unit}
				}
			default:
				t.Fatalf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	return out
}

func newReader(t *testing.T) (*sdkmetric.ManualReader, *sdkmetric.MeterProvider) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { require.NoError(t, mp.Shutdown(context.Background())) })
	return reader, mp
}

// The pool's known state is driven in a synctest bubble, so that its wait
// time is exact (see pooltest.DrivePool).
func TestObservePoolReportsAPoolInAKnownState(t *testing.T) {
	synctest.Test(t, testObservePoolReportsAPoolInAKnownState)
}

func testObservePoolReportsAPoolInAKnownState(t *testing.T) {
	reader, mp := newReader(t)
	var reg interface{ Unregister() error }
	p := pooltest.DrivePool(t, func(p *pool.Pool[int]) {
		r, err := poolotel.ObservePool(mp.Meter("test"), p, poolotel.Options{Name: "db",
			Attributes: []attribute.KeyValue{attribute.String("service", "api")}})
		require.NoError(t, err)
		reg = r
		got := collect(t, reader, poolotel.PoolNameKey, "db")
		require.Equal(t, point{1, false, "{request}"}, got["db.client.connection.pending_requests service=api"])
	})
	got := collect(t, reader, poolotel.PoolNameKey, "db")
	s := p.Stats()
	up, mono := false, true
	want := map[string]point{
		"db.client.connection.count db.client.connection.state=idle service=api":       {1, up, "{connection}"},
		"db.client.connection.count db.client.connection.state=used service=api":       {1, up, "{connection}"},
		"db.client.connection.max service=api":                                         {2, up, "{connection}"},
		"db.client.connection.pending_requests service=api":                            {0, up, "{request}"},
		"db.client.connection.timeouts service=api":                                    {1, mono, "{timeout}"},
		"poolkit.pool.connection.connecting service=api":                               {0, up, "{connection}"},
		"poolkit.pool.connection.closing service=api":                                  {0, up, "{connection}"},
		"poolkit.pool.acquires service=api":                                            {4, mono, "{acquire}"},
		"poolkit.pool.connects service=api":                                            {3, mono, "{connect}"},
		"poolkit.pool.connect.errors service=api":                                      {0, mono, "{error}"},
		"poolkit.pool.connection.created service=api":                                  {3, mono, "{connection}"},
		"poolkit.pool.connection.detached service=api":                                 {0, mono, "{connection}"},
		"poolkit.pool.waits service=api":                                               {3, mono, "{wait}"},
		"poolkit.pool.blocked.time service=api":                                        {s.BlockedTime.Seconds(), mono, "s"},
		"poolkit.pool.cancels service=api":                                             {1, mono, "{cancellation}"},
		"poolkit.pool.connection.closed poolkit.pool.close.reason=destroy service=api": {1, mono, "{connection}"},
		"poolkit.pool.blocked service=api":                                             {5, mono, "{acquire}"},
		"poolkit.pool.leaks service=api":                                               {0, mono, "{lease}"},
		"poolkit.pool.health_checks service=api":                                       {0, mono, "{check}"},
	}
	for _, r := range []string{"lifetime", "idle", "uses", "recycle", "reset", "release_check", "shrink", "pool_closed", "max_idle", "health_check", "evict", "evict_surplus", "evict_hot"} {
		want["poolkit.pool.connection.closed poolkit.pool.close.reason="+r+" service=api"] = point{0, mono, "{connection}"}
	}
	require.Equal(t, want, got)
	require.GreaterOrEqual(t, s.BlockedTime, pooltest.TimedOutWait, "the timed-out wait took time")

	require.NoError(t, reg.Unregister())
	require.Empty(t, collect(t, reader, poolotel.PoolNameKey, "db"), "nothing is reported after Unregister")
}

// With GOMAXPROCS 1 every Get and Put runs on the one P: the sources of the
// Gets are known.
func TestObserveBytesReportsAPoolInAKnownState(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	bp := pooltest.DriveBytes(t)

	reader, mp := newReader(t)
	reg, err := poolotel.ObserveBytes(mp.Meter("test"), bp, poolotel.Options{Name: "buffers"})
	require.NoError(t, err)
	defer reg.Unregister()
	got := collect(t, reader, poolotel.BytesNameKey, "buffers")
	s := bp.Stats()
	up, mono := false, true
	require.Equal(t, map[string]point{
		"poolkit.bytepool.gets poolkit.bytepool.source=local":            {1, mono, "{get}"},
		"poolkit.bytepool.gets poolkit.bytepool.source=exchange":         {0, mono, "{get}"},
		"poolkit.bytepool.gets poolkit.bytepool.source=steal":            {0, mono, "{get}"},
		"poolkit.bytepool.gets poolkit.bytepool.source=alloc":            {1, mono, "{get}"},
		"poolkit.bytepool.gets poolkit.bytepool.source=oversize":         {1, mono, "{get}"},
		"poolkit.bytepool.alloc.failures":                                {0, mono, "{failure}"},
		"poolkit.bytepool.parked":                                        {float64(s.Parked), mono, "{buffer}"},
		"poolkit.bytepool.drops":                                         {1, mono, "{buffer}"},
		"poolkit.bytepool.released":                                      {0, mono, "{buffer}"},
		"poolkit.bytepool.retained":                                      {128, up, "By"},
		"poolkit.bytepool.retained.limit":                                {float64(s.MaxRetained), up, "By"},
		"poolkit.bytepool.class.buffers poolkit.bytepool.class.size=64":  {0, up, "{buffer}"},
		"poolkit.bytepool.class.buffers poolkit.bytepool.class.size=80":  {0, up, "{buffer}"},
		"poolkit.bytepool.class.buffers poolkit.bytepool.class.size=96":  {0, up, "{buffer}"},
		"poolkit.bytepool.class.buffers poolkit.bytepool.class.size=112": {0, up, "{buffer}"},
		"poolkit.bytepool.class.buffers poolkit.bytepool.class.size=128": {1, up, "{buffer}"},
	}, got)
}

func TestObserveNeedsAName(t *testing.T) {
	_, mp := newReader(t)
	_, err := poolotel.ObservePool(mp.Meter("test"), (*pool.Pool[int])(nil), poolotel.Options{})
	require.ErrorContains(t, err, "Options.Name")
	_, err = poolotel.ObserveBytes(mp.Meter("test"), (*bytepool.Pool)(nil), poolotel.Options{})
	require.ErrorContains(t, err, "Options.Name")
}

// NewObserver records every Acquire's wait and every connect's time in the
// semantic conventions' histograms; failures carry error.type.
func TestObserverRecordsWaitAndCreateTimes(t *testing.T) {
	reader, mp := newReader(t)
	obs, err := poolotel.NewObserver(mp.Meter("test"), poolotel.Options{Name: "db"})
	require.NoError(t, err)
	fail := false
	p, err := pool.New[int](manager.Funcs[int]{ConnectFunc: func(context.Context) (int, error) {
		if fail {
			return 0, errors.New("refused")
		}
		return 1, nil
	}}, pool.Config{MaxSize: 2, Observer: obs})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close(context.Background())) })
	l, err := p.Acquire(t.Context()) // connects
	require.NoError(t, err)
	l.Release()
	l, err = p.Acquire(t.Context()) // idle
	require.NoError(t, err)
	fail = true
	_, err = p.Acquire(t.Context()) // a failed connect
	require.Error(t, err)
	l.Release()

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			require.True(t, ok, "%s: %T", m.Name, m.Data)
			require.Equal(t, "s", m.Unit)
			for _, dp := range h.DataPoints {
				name, _ := dp.Attributes.Value(poolotel.PoolNameKey)
				require.Equal(t, "db", name.AsString())
				k := m.Name
				if e, ok := dp.Attributes.Value("error.type"); ok {
					k += " error.type=" + e.AsString()
				}
				counts[k] = dp.Count
			}
		}
	}
	require.Equal(t, map[string]uint64{
		"db.client.connection.wait_time":                     2,
		"db.client.connection.wait_time error.type=_OTHER":   1,
		"db.client.connection.create_time":                   1,
		"db.client.connection.create_time error.type=_OTHER": 1,
	}, counts)
}

// NewObserver's Observer follows the rule on pool.Observer: it embeds
// pool.NopObserver, so that it keeps compiling, and ignores the event, when
// a method is added.
func TestObserverEmbedsNopObserver(t *testing.T) {
	_, mp := newReader(t)
	obs, err := poolotel.NewObserver(mp.Meter("test"), poolotel.Options{Name: "db"})
	require.NoError(t, err)
	typ := reflect.TypeOf(obs).Elem()
	f, ok := typ.FieldByName("NopObserver")
	require.True(t, ok && f.Anonymous && f.Type == reflect.TypeFor[pool.NopObserver](), "%v does not embed pool.NopObserver", typ)
}

// ObservePool takes a pool's Config.Name when Options.Name is empty.
func TestObservePoolTakesThePoolsName(t *testing.T) {
	reader, mp := newReader(t)
	p, err := pool.New[int](manager.Funcs[int]{ConnectFunc: func(context.Context) (int, error) { return 1, nil }},
		pool.Config{Name: "db", MaxSize: 3})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close(context.Background())) }()
	reg, err := poolotel.ObservePool(mp.Meter("test"), p, poolotel.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, reg.Unregister()) }()
	got := collect(t, reader, poolotel.PoolNameKey, "db")
	require.Equal(t, point{3, false, "{connection}"}, got["db.client.connection.max"])
}
