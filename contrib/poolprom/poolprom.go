// Package poolprom exports the statistics of poolkit's pools to Prometheus:
// [NewPoolCollector] for a [pool.Pool] ([pool.Stats]), [NewKeyedCollector]
// for a [pool.Keyed], [NewBytesCollector] for a [bytepool.Pool]
// ([bytepool.Stats]). Each is a prometheus.Collector that reads one Stats
// snapshot per scrape; nothing runs between scrapes and the pools' hot
// paths pay nothing.
//
// Names follow Prometheus conventions: namespace_subsystem_name, base units
// (seconds, bytes), _total on counters, and one metric with a label where
// pool.Stats has one field per value (connections by state, closes by
// reason). Pools registered together are told apart by [Options.ConstLabels],
// which must then use the same label names for every pool; a pool with a
// [pool.Config.Name] (or a facade over one with a Name method, such as
// pgxmanager.Pool) gets the label pool="Name" unless ConstLabels sets "pool".
//
//	reg.MustRegister(poolprom.NewPoolCollector(p, poolprom.Options{ConstLabels: prometheus.Labels{"pool": "db"}}))
//
// The metrics of NewPoolCollector, with the default namespace:
//
//	poolkit_pool_connections{state}                gauge: state is idle, used, connecting or closing
//	poolkit_pool_max_connections                   gauge: MaxSize
//	poolkit_pool_pending_acquires                  gauge: Acquire calls waiting in line
//	poolkit_pool_acquires_total                    counter
//	poolkit_pool_connects_total                    counter: Manager.Connect attempts
//	poolkit_pool_connect_errors_total              counter
//	poolkit_pool_connections_created_total         counter
//	poolkit_pool_connections_detached_total        counter
//	poolkit_pool_connections_closed_total{reason}  counter: reason is a pool.CloseReason's String (lifetime, idle, uses, recycle, destroy, reset, release_check, shrink, pool_closed, max_idle, health_check, evict, evict_surplus, evict_hot)
//	poolkit_pool_waits_total                       counter: acquires that waited in line
//	poolkit_pool_timeouts_total                    counter: waits or connects ended by a deadline
//	poolkit_pool_cancels_total                     counter: waits or connects ended by a cancellation
//	poolkit_pool_blocked_acquire_seconds           histogram: time taken by the acquires that had to connect or wait (pool.Stats.WaitBuckets; _count is Stats.Blocked)
//	poolkit_pool_leaks_total                       counter: leases held longer than LeakThreshold
//	poolkit_pool_health_checks_total               counter: background health checks run
//
// NewKeyedCollector exports a keyed pool's totals as these metrics, and
// with [KeyedOptions.PerKey] each key's figures besides, as
// poolkit_pool_key_* twins of them all but max_connections, with a label
// key, for [KeyedOptions.MaxKeys] keys at most and one key="other" for the
// rest:
//
//	poolkit_pool_key_connections{key,state}        gauge
//	poolkit_pool_key_connections_closed_total{key,reason}  counter: evict counts the objects closed to make room for another key
//	poolkit_pool_key_blocked_acquire_seconds{key}  histogram
//	poolkit_pool_key_…{key}                        and so on, each as its poolkit_pool_* twin
//
// The metrics of NewBytesCollector:
//
//	poolkit_bytepool_gets_total{source}            counter: source is local, exchange, steal, alloc or oversize
//	poolkit_bytepool_alloc_failures_total          counter
//	poolkit_bytepool_parked_total                  counter: Puts filed in an exchange
//	poolkit_bytepool_drops_total                   counter: Puts not kept
//	poolkit_bytepool_released_total                counter: buffers let go by trimming
//	poolkit_bytepool_retained_bytes                gauge
//	poolkit_bytepool_max_retained_bytes            gauge: the retention bound
//	poolkit_bytepool_class_buffers{size}           gauge: buffers kept, per size class (size in bytes); only with Options.PerClass
//
// The per-class series are left out unless Options.PerClass asks for them:
// there is one per size class (73 with bytepool's default Config, 64 B to
// 16 MiB), and in a typical service all but a few read 0; retained_bytes
// and gets_total say how much a pool keeps and how well it serves without
// them.
//
// dashboard.json, in this module's folder, is a Grafana dashboard over
// these metrics (default namespace; pools told apart by a "pool" label, as
// in the example above): connections by state, blocked acquires (rate,
// mean and quantiles from the histogram), closes by reason, connects, and
// the byte pool's retention and sources. A keyed collector's totals are
// on it as a pool's; its per-key series are not. Its per-class panel is
// empty unless the bytes collector has Options.PerClass, as its title says.
package poolprom

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/pool"
)

// DefaultNamespace is [Options.Namespace]'s default.
const DefaultNamespace = "poolkit"

// Options name the metrics of a collector.
type Options struct {
	// Namespace prefixes every metric name. "": DefaultNamespace.
	Namespace string
	// ConstLabels are added to every metric, to tell pools apart (e.g.
	// {"pool": "db"}).
	ConstLabels prometheus.Labels
	// PerClass, for NewBytesCollector, adds
	// poolkit_bytepool_class_buffers{size}: one series per size class of
	// the pool (73 with bytepool's default Config, 64 B to 16 MiB), most
	// of them 0 in a typical service. Default false: those series are left
	// out. The collector's other metrics do not depend on it.
	PerClass bool
}

// named adds the label pool="Name" when p has a name (its Name method's:
// pool.Pool's, pool.Keyed's, pgxmanager.Pool's) and o's ConstLabels set no
// "pool" label of their own.
func (o Options) named(p PoolStatser) Options {
	n, ok := p.(interface{ Name() string })
	if !ok || n.Name() == "" {
		return o
	}
	if _, set := o.ConstLabels["pool"]; set {
		return o
	}
	labels := prometheus.Labels{"pool": n.Name()}
	maps.Copy(labels, o.ConstLabels)
	o.ConstLabels = labels
	return o
}

func (o Options) namespace() string {
	if o.Namespace == "" {
		return DefaultNamespace
	}
	return o.Namespace
}

// PoolStatser is what [NewPoolCollector] reads: a *pool.Pool[T] of any T, or a
// facade over one (such as pgxmanager.Pool). If it also has a method
// Name() string, as both of those do, its result is the pool label (see
// [NewPoolCollector]).
type PoolStatser interface{ Stats() pool.Stats }

// BytesStatser is what [NewBytesCollector] reads: a *[bytepool.Pool].
type BytesStatser interface{ Stats() bytepool.Stats }

// series is one time series of a collector: its family, its label values
// (none, or one), and how to read its value from a snapshot S.
type series[S any] struct {
	desc  *prometheus.Desc
	typ   prometheus.ValueType
	label string // the value of the family's one variable label; "" if it has none
	value func(*S) float64
}

// family declares a metric; with label set, each of values becomes a series
// with that label value.
type family[S any] struct {
	name, help string
	typ        prometheus.ValueType
	label      string
	values     []labelled[S] // with label: one per label value
	value      func(*S) float64
	whole      bool // a figure of the pool as a whole, not exported per key
}

type labelled[S any] struct {
	label string
	value func(*S) float64
}

// collector is a prometheus.Collector over a source of snapshots S.
type collector[S any] struct {
	stats  func() S
	descs  []*prometheus.Desc
	series []series[S]
}

// newCollector returns a collector of families; lead names the variable
// labels every series has before its family's own (NewKeyedCollector's
// "key"), whose values send is given.
func newCollector[S any](stats func() S, subsystem string, o Options, families []family[S], lead ...string) *collector[S] {
	c := &collector[S]{stats: stats}
	for _, f := range families {
		labels := slices.Clip(lead)
		if f.label != "" {
			labels = append(labels, f.label)
		}
		d := prometheus.NewDesc(prometheus.BuildFQName(o.namespace(), subsystem, f.name), f.help, labels, o.ConstLabels)
		c.descs = append(c.descs, d)
		if f.label == "" {
			c.series = append(c.series, series[S]{desc: d, typ: f.typ, value: f.value})
			continue
		}
		for _, v := range f.values {
			c.series = append(c.series, series[S]{desc: d, typ: f.typ, label: v.label, value: v.value})
		}
	}
	return c
}

func (c *collector[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads one snapshot and sends every series of it.
func (c *collector[S]) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	c.send(ch, &s)
}

// send sends every series of s, with lead's label values first.
func (c *collector[S]) send(ch chan<- prometheus.Metric, s *S, lead ...string) {
	lead = slices.Clip(lead)
	for _, m := range c.series {
		if m.label == "" {
			ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(s), lead...)
		} else {
			ch <- prometheus.MustNewConstMetric(m.desc, m.typ, m.value(s), append(lead, m.label)...)
		}
	}
}

// bytesCollector adds to the fixed series, with Options.PerClass, one per
// size class, which a snapshot lists.
type bytesCollector struct {
	*collector[bytepool.Stats]
	classBuffers *prometheus.Desc // nil without Options.PerClass
}

func (c bytesCollector) Describe(ch chan<- *prometheus.Desc) {
	c.collector.Describe(ch)
	if c.classBuffers != nil {
		ch <- c.classBuffers
	}
}

func (c bytesCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	c.send(ch, &s)
	if c.classBuffers == nil {
		return
	}
	for _, cl := range s.Classes {
		ch <- prometheus.MustNewConstMetric(c.classBuffers, prometheus.GaugeValue, float64(cl.Buffers), strconv.Itoa(cl.Size))
	}
}

func u(v uint64) float64 { return float64(v) }

// poolCollector adds to the fixed series the histogram of blocked acquires.
type poolCollector struct {
	*collector[pool.Stats]
	blocked *prometheus.Desc
}

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	c.collector.Describe(ch)
	ch <- c.blocked
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	c.send(ch, &s)
	ch <- blockedHistogram(c.blocked, &s)
}

// blockedHistogram is the histogram of s's blocked acquires, with lead's
// label values.
func blockedHistogram(d *prometheus.Desc, s *pool.Stats, lead ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(s.WaitBuckets))
	for i, n := range s.WaitBuckets {
		buckets[(time.Microsecond << i).Seconds()] = n
	}
	return prometheus.MustNewConstHistogram(d, s.Blocked, s.BlockedTime.Seconds(), buckets, lead...)
}

func blockedDesc(o Options, subsystem string, lead ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(o.namespace(), subsystem, "blocked_acquire_seconds"),
		"Time taken by the Acquire calls that could not be served at once (they connected or waited in line), from then to their return.",
		lead, o.ConstLabels)
}

// NewPoolCollector returns a collector of p's statistics (see the package
// doc for the metrics). It reads p.Stats once per scrape. If p has a method
// Name() string whose result is not empty, every series has the label
// pool=p.Name(), unless o.ConstLabels sets "pool": so a named pool, or a
// facade over one, registers beside a named keyed collector.
func NewPoolCollector(p PoolStatser, o Options) prometheus.Collector {
	o = o.named(p)
	return poolCollector{
		collector: newCollector(p.Stats, "pool", o, poolFamilies()),
		blocked:   blockedDesc(o, "pool"),
	}
}

// closeReasons is one series per pool.CloseReason, labelled with its name.
func closeReasons() []labelled[pool.Stats] {
	var v []labelled[pool.Stats]
	for r := pool.CloseReason(1); int(r) < len(pool.Stats{}.ClosedBy); r++ {
		v = append(v, labelled[pool.Stats]{r.String(), func(s *pool.Stats) float64 { return u(s.ClosedBy[r]) }})
	}
	return v
}

// poolFamilies are the metrics of pool.Stats but the histogram.
func poolFamilies() []family[pool.Stats] {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	return []family[pool.Stats]{
		{name: "connections", help: "Connections by state: idle, used (leased), connecting, closing (waiting for or in Manager.Close).",
			typ: gauge, label: "state", values: []labelled[pool.Stats]{
				{"idle", func(s *pool.Stats) float64 { return float64(s.Idle) }},
				{"used", func(s *pool.Stats) float64 { return float64(s.Leased) }},
				{"connecting", func(s *pool.Stats) float64 { return float64(s.Connecting) }},
				{"closing", func(s *pool.Stats) float64 { return float64(s.Closing) }},
			}},
		{name: "max_connections", help: "The most connections the pool may hold (MaxSize).",
			typ: gauge, value: func(s *pool.Stats) float64 { return float64(s.MaxSize) }, whole: true},
		{name: "pending_acquires", help: "Acquire calls waiting in line for a connection.",
			typ: gauge, value: func(s *pool.Stats) float64 { return float64(s.Waiting) }},
		{name: "acquires_total", help: "Successful Acquire and TryAcquire calls.",
			typ: counter, value: func(s *pool.Stats) float64 { return u(s.Acquires) }},
		{name: "connects_total", help: "Manager.Connect attempts.",
			typ: counter, value: func(s *pool.Stats) float64 { return u(s.Connects) }},
		{name: "connect_errors_total", help: "Manager.Connect attempts that failed.",
			typ: counter, value: func(s *pool.Stats) float64 { return u(s.ConnectErrors) }},
		{name: "connections_created_total", help: "Connections made (successful connects).",
			typ: counter, value: func(s *pool.Stats) float64 { return u(s.Created) }},
		{name: "connections_detached_total", help: "Connections taken out of the pool by Lease.Detach.",
			typ: counter, value: func(s *pool.Stats) float64 { return u(s.Detached) }},
		{name: "connections_closed_total", help: "Connections closed (Manager.Close returned), by reason.",
			typ: counter, label: "reason", values: closeReasons()},
		{name: "waits_total", help: "Acquire calls that waited in line.",
			typ: counter, value: func(s *pool.Stats) float64 { return u(s.Waits) }},
		{name: "timeouts_total", help: "Waits or connects ended by a deadline.",
			typ: counter, value: func(s *pool.Stats) float64 { return u(s.Timeouts) }},
		{name: "cancels_total", help: "Waits or connects ended by a cancellation.",
			typ: counter, value: func(s *pool.Stats) float64 { return u(s.Cancels) }},
		{name: "leaks_total", help: "Leases held longer than LeakThreshold (each reported once).",
			typ: counter, value: func(s *pool.Stats) float64 { return u(s.Leaks) }},
		{name: "health_checks_total", help: "Background health checks run.",
			typ: counter, value: func(s *pool.Stats) float64 { return u(s.HealthChecks) }},
	}
}

// NewBytesCollector returns a collector of p's statistics (see the package
// doc for the metrics). It reads p.Stats once per scrape; [bytepool.Stats]
// allocates.
func NewBytesCollector(p BytesStatser, o Options) prometheus.Collector {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	c := newCollector(p.Stats, "bytepool", o, []family[bytepool.Stats]{
		{name: "gets_total", help: "Get calls, by how they were served: the caller's per-P tiers (local), the exchange, another P's spill (steal), a new class buffer (alloc), or a plain allocation above MaxSize (oversize).",
			typ: counter, label: "source", values: []labelled[bytepool.Stats]{
				{"local", func(s *bytepool.Stats) float64 { return u(s.LocalHits) }},
				{"exchange", func(s *bytepool.Stats) float64 { return u(s.ExchangeHits) }},
				{"steal", func(s *bytepool.Stats) float64 { return u(s.StealHits) }},
				{"alloc", func(s *bytepool.Stats) float64 { return u(s.Allocs) }},
				{"oversize", func(s *bytepool.Stats) float64 { return u(s.Oversize) }},
			}},
		{name: "alloc_failures_total", help: "Class allocations whose Allocator failed (the pool used make instead).",
			typ: counter, value: func(s *bytepool.Stats) float64 { return u(s.AllocFailures) }},
		{name: "parked_total", help: "Put calls filed in an exchange.",
			typ: counter, value: func(s *bytepool.Stats) float64 { return u(s.Parked) }},
		{name: "drops_total", help: "Put calls whose buffer was not kept.",
			typ: counter, value: func(s *bytepool.Stats) float64 { return u(s.Drops) }},
		{name: "released_total", help: "Buffers let go from the pool's tiers (Trim, idle trimming).",
			typ: counter, value: func(s *bytepool.Stats) float64 { return u(s.Released) }},
		{name: "retained_bytes", help: "Bytes kept for reuse.",
			typ: gauge, value: func(s *bytepool.Stats) float64 { return float64(s.Retained) }},
		{name: "max_retained_bytes", help: "The retention bound, in bytes.",
			typ: gauge, value: func(s *bytepool.Stats) float64 { return float64(s.MaxRetained) }},
	})
	bc := bytesCollector{collector: c}
	if o.PerClass {
		bc.classBuffers = prometheus.NewDesc(prometheus.BuildFQName(o.namespace(), "bytepool", "class_buffers"),
			"Buffers kept for reuse, per size class (size in bytes).", []string{"size"}, o.ConstLabels)
	}
	return bc
}
