// Package poolotel exports the statistics of poolkit's pools through the
// OpenTelemetry metrics API: [ObservePool] for a [pool.Pool] ([pool.Stats]),
// [ObserveKeyed] for a [pool.Keyed], [ObserveBytes] for a [bytepool.Pool]
// ([bytepool.Stats]). Each uses asynchronous instruments and one callback
// that reads one Stats snapshot per collection; nothing runs between
// collections and the pools' hot paths pay nothing. Unregister the
// returned registration to stop.
//
// The semantic conventions' histograms of each acquire's wait and each
// connect's time cannot be read from snapshots: [NewObserver] returns a
// [pool.Observer] (Config.Observer) that records them as they happen,
//
//	db.client.connection.wait_time                           Histogram s: time to obtain a connection, every Acquire (AcquireEvent.Wait)
//	db.client.connection.create_time                         Histogram s: time to make a connection, every Manager.Connect
//
// at the cost of an Observer on every Acquire (see docs/BENCHMARKS.md).
//
// Pool metrics use OpenTelemetry's database client semantic conventions
// where one fits (the db.client.connection.* metrics, with the
// db.client.connection.pool.name attribute on every pool metric); the rest
// are named under poolkit.pool.*:
//
//	db.client.connection.count{db.client.connection.state}  UpDownCounter {connection}: state idle or used
//	db.client.connection.max                                 UpDownCounter {connection}: MaxSize
//	db.client.connection.pending_requests                    UpDownCounter {request}: Acquire calls waiting in line
//	db.client.connection.timeouts                            Counter {timeout}: waits or connects ended by a deadline
//	poolkit.pool.connection.connecting                       UpDownCounter {connection}
//	poolkit.pool.connection.closing                          UpDownCounter {connection}: waiting for or in Manager.Close
//	poolkit.pool.acquires                                    Counter {acquire}
//	poolkit.pool.connects                                    Counter {connect}: Manager.Connect attempts
//	poolkit.pool.connect.errors                              Counter {error}
//	poolkit.pool.connection.created                          Counter {connection}
//	poolkit.pool.connection.detached                         Counter {connection}
//	poolkit.pool.connection.closed{poolkit.pool.close.reason} Counter {connection}: a pool.CloseReason's String (lifetime, idle, uses, recycle, destroy, reset, release_check, shrink, pool_closed, max_idle, health_check, evict)
//	poolkit.pool.waits                                       Counter {wait}: acquires that waited in line
//	poolkit.pool.blocked.time                                Counter s: time taken by the acquires that had to connect or wait (pool.Stats.BlockedTime)
//	poolkit.pool.cancels                                     Counter {cancellation}: waits or connects ended by a cancellation
//	poolkit.pool.blocked                                     Counter {acquire}: acquires that had to connect or wait (pool.Stats.Blocked)
//	poolkit.pool.leaks                                       Counter {lease}: leases held longer than LeakThreshold
//	poolkit.pool.health_checks                               Counter {check}: background health checks run
//
// ObserveKeyed measures a keyed pool's totals on these instruments, and
// with [KeyedOptions.PerKey] each key's figures besides, on twins of them
// all but db.client.connection.max, with the [KeyNameKey] attribute, for
// [KeyedOptions.MaxKeys] keys at most and one key "other" for the rest:
//
//	poolkit.pool.key.connection.count{poolkit.pool.key.name,db.client.connection.state}  UpDownCounter {connection}
//	poolkit.pool.key.connection.pending_requests{poolkit.pool.key.name}                   UpDownCounter {request}
//	poolkit.pool.key.connection.timeouts{poolkit.pool.key.name}                           Counter {timeout}
//	poolkit.pool.key.…{poolkit.pool.key.name}                    and so on, each as its poolkit.pool.* twin
//
// Bytepool metrics, with the poolkit.bytepool.name attribute:
//
//	poolkit.bytepool.gets{poolkit.bytepool.source}           Counter {get}: local, exchange, steal, alloc or oversize
//	poolkit.bytepool.alloc.failures                          Counter {failure}
//	poolkit.bytepool.parked                                  Counter {buffer}: Puts filed in an exchange
//	poolkit.bytepool.drops                                   Counter {buffer}: Puts not kept
//	poolkit.bytepool.released                                Counter {buffer}: buffers let go by trimming
//	poolkit.bytepool.retained                                UpDownCounter By
//	poolkit.bytepool.retained.limit                          UpDownCounter By: the retention bound
//	poolkit.bytepool.class.buffers{poolkit.bytepool.class.size} UpDownCounter {buffer}: per size class, in bytes
package poolotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/pool"
)

// Attribute keys.
const (
	// PoolNameKey names a pool (semantic conventions: required on the
	// db.client.connection.* metrics).
	PoolNameKey = attribute.Key("db.client.connection.pool.name")
	// StateKey is a connection's state: idle or used.
	StateKey = attribute.Key("db.client.connection.state")
	// BytesNameKey names a bytepool.
	BytesNameKey = attribute.Key("poolkit.bytepool.name")
)

// Options name a pool's measurements.
type Options struct {
	// Name is the pool's name, the value of PoolNameKey (ObservePool) or
	// BytesNameKey (ObserveBytes). Required, but ObservePool takes the
	// result of the pool's method Name() string when it is empty: a
	// pool.Pool's pool.Config.Name, a facade's such as pgxmanager.Pool's.
	Name string
	// Attributes are added to every measurement.
	Attributes []attribute.KeyValue
}

// PoolStatser is what [ObservePool] reads: a *pool.Pool[T] of any T, or a
// facade over one (such as pgxmanager.Pool).
type PoolStatser interface{ Stats() pool.Stats }

// BytesStatser is what [ObserveBytes] reads: a *[bytepool.Pool].
type BytesStatser interface{ Stats() bytepool.Stats }

// instrument declares an Int64 asynchronous instrument: a Counter (counter
// set) or an UpDownCounter. With attr set, each of points is measured with
// that attribute; otherwise value is measured once.
type instrument[S any] struct {
	name, unit, desc string
	counter          bool
	attr             attribute.Key
	points           []point[S]
	value            func(*S) int64
	whole            bool // a figure of the pool as a whole, not measured per key
}

type point[S any] struct {
	attr  string
	value func(*S) int64
}

// series is one measurement of a callback.
type series[S any] struct {
	obs   metric.Int64Observable
	attrs metric.MeasurementOption // the base attributes and kv
	kv    []attribute.KeyValue     // the point's attribute, if its instrument has one
	value func(*S) int64
}

// observer is the state of one registration: its instruments and how to
// read each from a snapshot S.
type observer[S any] struct {
	base   []attribute.KeyValue
	series []series[S]
	obs    []metric.Observable
}

// withAttrs returns the measurement option of the base attributes plus kv.
func (o *observer[S]) withAttrs(kv ...attribute.KeyValue) metric.MeasurementOption {
	all := append(append([]attribute.KeyValue(nil), o.base...), kv...)
	return metric.WithAttributeSet(attribute.NewSet(all...))
}

// add creates the instruments of is on meter.
func (o *observer[S]) add(meter metric.Meter, is []instrument[S]) error {
	for _, in := range is {
		var (
			obs metric.Int64Observable
			err error
		)
		unit, desc := metric.WithUnit(in.unit), metric.WithDescription(in.desc)
		if in.counter {
			obs, err = meter.Int64ObservableCounter(in.name, unit, desc)
		} else {
			obs, err = meter.Int64ObservableUpDownCounter(in.name, unit, desc)
		}
		if err != nil {
			return err
		}
		o.obs = append(o.obs, obs)
		if in.attr == "" {
			o.series = append(o.series, series[S]{obs: obs, attrs: o.withAttrs(), value: in.value})
			continue
		}
		for _, p := range in.points {
			kv := []attribute.KeyValue{in.attr.String(p.attr)}
			o.series = append(o.series, series[S]{obs: obs, attrs: o.withAttrs(kv...), kv: kv, value: p.value})
		}
	}
	return nil
}

// observe measures every series of s.
func (o *observer[S]) observe(ob metric.Observer, s *S) {
	for _, m := range o.series {
		ob.ObserveInt64(m.obs, m.value(s), m.attrs)
	}
}

func newObserver[S any](nameKey attribute.Key, opt Options) (*observer[S], error) {
	if opt.Name == "" {
		return nil, errors.New("poolotel: Options.Name is empty (the pool's name, attribute " + string(nameKey) + ")")
	}
	base := append([]attribute.KeyValue{nameKey.String(opt.Name)}, opt.Attributes...)
	return &observer[S]{base: base}, nil
}

func i64(v uint64) int64 { return int64(v) }

// closeReasons is one point per pool.CloseReason, named by its String.
func closeReasons() []point[pool.Stats] {
	var v []point[pool.Stats]
	for r := pool.CloseReason(1); int(r) < len(pool.Stats{}.ClosedBy); r++ {
		v = append(v, point[pool.Stats]{r.String(), func(s *pool.Stats) int64 { return i64(s.ClosedBy[r]) }})
	}
	return v
}

// ObservePool registers, on meter, asynchronous instruments that report
// p's statistics at each collection (see the package doc for the metrics).
// It returns an error if opt.Name is empty or an instrument cannot be made.
func ObservePool(meter metric.Meter, p PoolStatser, opt Options) (metric.Registration, error) {
	o, waitTime, err := observePool(meter, p, opt)
	if err != nil {
		return nil, err
	}
	attrs := o.withAttrs()
	return meter.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		s := p.Stats()
		o.observe(ob, &s)
		ob.ObserveFloat64(waitTime, s.BlockedTime.Seconds(), attrs)
		return nil
	}, append(o.obs, waitTime)...)
}

// observePool makes the instruments of ObservePool, named for p.
func observePool(meter metric.Meter, p PoolStatser, opt Options) (*observer[pool.Stats], metric.Float64ObservableCounter, error) {
	if n, ok := p.(interface{ Name() string }); ok && opt.Name == "" {
		opt.Name = n.Name() // pool.Config.Name
	}
	o, err := newObserver[pool.Stats](PoolNameKey, opt)
	if err != nil {
		return nil, nil, err
	}
	if err := o.add(meter, poolInstruments()); err != nil {
		return nil, nil, err
	}
	waitTime, err := meter.Float64ObservableCounter(waitTimeName, metric.WithUnit("s"), metric.WithDescription(waitTimeDesc))
	if err != nil {
		return nil, nil, err
	}
	return o, waitTime, nil
}

const (
	waitTimeName = "poolkit.pool.blocked.time"
	waitTimeDesc = "Time taken by the Acquire calls that had to connect or wait (pool.Stats.BlockedTime)."
)

// poolInstruments are the instruments of pool.Stats but the blocked time.
func poolInstruments() []instrument[pool.Stats] {
	const conn = "{connection}"
	return []instrument[pool.Stats]{
		{name: "db.client.connection.count", unit: conn, desc: "The number of connections that are currently in state described by the state attribute.",
			attr: StateKey, points: []point[pool.Stats]{
				{"idle", func(s *pool.Stats) int64 { return int64(s.Idle) }},
				{"used", func(s *pool.Stats) int64 { return int64(s.Leased) }},
			}},
		{name: "db.client.connection.max", unit: conn, desc: "The maximum number of open connections allowed.",
			value: func(s *pool.Stats) int64 { return int64(s.MaxSize) }, whole: true},
		{name: "db.client.connection.pending_requests", unit: "{request}", desc: "The number of current pending requests for an open connection.",
			value: func(s *pool.Stats) int64 { return int64(s.Waiting) }},
		{name: "db.client.connection.timeouts", unit: "{timeout}", counter: true, desc: "The number of connection timeouts that have occurred trying to obtain a connection from the pool.",
			value: func(s *pool.Stats) int64 { return i64(s.Timeouts) }},
		{name: "poolkit.pool.connection.connecting", unit: conn, desc: "Connections being made (Manager.Connect in flight).",
			value: func(s *pool.Stats) int64 { return int64(s.Connecting) }},
		{name: "poolkit.pool.connection.closing", unit: conn, desc: "Connections waiting for, or in, Manager.Close.",
			value: func(s *pool.Stats) int64 { return int64(s.Closing) }},
		{name: "poolkit.pool.acquires", unit: "{acquire}", counter: true, desc: "Successful Acquire and TryAcquire calls.",
			value: func(s *pool.Stats) int64 { return i64(s.Acquires) }},
		{name: "poolkit.pool.connects", unit: "{connect}", counter: true, desc: "Manager.Connect attempts.",
			value: func(s *pool.Stats) int64 { return i64(s.Connects) }},
		{name: "poolkit.pool.connect.errors", unit: "{error}", counter: true, desc: "Manager.Connect attempts that failed.",
			value: func(s *pool.Stats) int64 { return i64(s.ConnectErrors) }},
		{name: "poolkit.pool.connection.created", unit: conn, counter: true, desc: "Connections made (successful connects).",
			value: func(s *pool.Stats) int64 { return i64(s.Created) }},
		{name: "poolkit.pool.connection.detached", unit: conn, counter: true, desc: "Connections taken out of the pool by Lease.Detach.",
			value: func(s *pool.Stats) int64 { return i64(s.Detached) }},
		{name: "poolkit.pool.connection.closed", unit: conn, counter: true, desc: "Connections closed (Manager.Close returned), by reason.",
			attr: "poolkit.pool.close.reason", points: closeReasons()},
		{name: "poolkit.pool.waits", unit: "{wait}", counter: true, desc: "Acquire calls that waited in line.",
			value: func(s *pool.Stats) int64 { return i64(s.Waits) }},
		{name: "poolkit.pool.cancels", unit: "{cancellation}", counter: true, desc: "Waits or connects ended by a cancellation.",
			value: func(s *pool.Stats) int64 { return i64(s.Cancels) }},
		{name: "poolkit.pool.blocked", unit: "{acquire}", counter: true, desc: "Acquire calls that could not be served at once: they connected or waited in line.",
			value: func(s *pool.Stats) int64 { return i64(s.Blocked) }},
		{name: "poolkit.pool.leaks", unit: "{lease}", counter: true, desc: "Leases held longer than LeakThreshold (each reported once).",
			value: func(s *pool.Stats) int64 { return i64(s.Leaks) }},
		{name: "poolkit.pool.health_checks", unit: "{check}", counter: true, desc: "Background health checks run.",
			value: func(s *pool.Stats) int64 { return i64(s.HealthChecks) }},
	}
}

// ObserveBytes registers, on meter, asynchronous instruments that report
// p's statistics at each collection (see the package doc for the metrics).
// It returns an error if opt.Name is empty or an instrument cannot be made.
// [bytepool.Stats] allocates: one snapshot per collection.
func ObserveBytes(meter metric.Meter, p BytesStatser, opt Options) (metric.Registration, error) {
	o, err := newObserver[bytepool.Stats](BytesNameKey, opt)
	if err != nil {
		return nil, err
	}
	const buf = "{buffer}"
	err = o.add(meter, []instrument[bytepool.Stats]{
		{name: "poolkit.bytepool.gets", unit: "{get}", counter: true, desc: "Get calls, by how they were served.",
			attr: "poolkit.bytepool.source", points: []point[bytepool.Stats]{
				{"local", func(s *bytepool.Stats) int64 { return i64(s.LocalHits) }},
				{"exchange", func(s *bytepool.Stats) int64 { return i64(s.ExchangeHits) }},
				{"steal", func(s *bytepool.Stats) int64 { return i64(s.StealHits) }},
				{"alloc", func(s *bytepool.Stats) int64 { return i64(s.Allocs) }},
				{"oversize", func(s *bytepool.Stats) int64 { return i64(s.Oversize) }},
			}},
		{name: "poolkit.bytepool.alloc.failures", unit: "{failure}", counter: true, desc: "Class allocations whose Allocator failed (the pool used make instead).",
			value: func(s *bytepool.Stats) int64 { return i64(s.AllocFailures) }},
		{name: "poolkit.bytepool.parked", unit: buf, counter: true, desc: "Put calls filed in an exchange.",
			value: func(s *bytepool.Stats) int64 { return i64(s.Parked) }},
		{name: "poolkit.bytepool.drops", unit: buf, counter: true, desc: "Put calls whose buffer was not kept.",
			value: func(s *bytepool.Stats) int64 { return i64(s.Drops) }},
		{name: "poolkit.bytepool.released", unit: buf, counter: true, desc: "Buffers let go from the pool's tiers (Trim, idle trimming).",
			value: func(s *bytepool.Stats) int64 { return i64(s.Released) }},
		{name: "poolkit.bytepool.retained", unit: "By", desc: "Bytes kept for reuse.",
			value: func(s *bytepool.Stats) int64 { return s.Retained }},
		{name: "poolkit.bytepool.retained.limit", unit: "By", desc: "The retention bound.",
			value: func(s *bytepool.Stats) int64 { return s.MaxRetained }},
	})
	if err != nil {
		return nil, err
	}
	classBuffers, err := meter.Int64ObservableUpDownCounter("poolkit.bytepool.class.buffers", metric.WithUnit(buf),
		metric.WithDescription("Buffers kept for reuse, per size class (size in bytes)."))
	if err != nil {
		return nil, err
	}
	// A pool's size classes are fixed when it is made: their attribute sets
	// are built once, here, from a first snapshot.
	const sizeKey = attribute.Key("poolkit.bytepool.class.size")
	var classAttrs []metric.MeasurementOption
	for _, cl := range p.Stats().Classes {
		classAttrs = append(classAttrs, o.withAttrs(sizeKey.Int(cl.Size)))
	}
	return meter.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		s := p.Stats()
		o.observe(ob, &s)
		for i, cl := range s.Classes {
			if i < len(classAttrs) {
				ob.ObserveInt64(classBuffers, int64(cl.Buffers), classAttrs[i])
			} else {
				ob.ObserveInt64(classBuffers, int64(cl.Buffers), o.withAttrs(sizeKey.Int(cl.Size)))
			}
		}
		return nil
	}, append(o.obs, classBuffers)...)
}
