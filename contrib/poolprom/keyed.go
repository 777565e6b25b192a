package poolprom

import (
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/poolkit/poolkit/contrib/poolprom/internal/keyfold"
	"github.com/poolkit/poolkit/pool"
)

// DefaultMaxKeys is [KeyedOptions.MaxKeys]'s default.
const DefaultMaxKeys = 20

// OtherKey is the key label of the series into which a keyed collector
// folds the keys beyond [KeyedOptions.MaxKeys].
const OtherKey = keyfold.OtherKey

// KeyedStatser is what [NewKeyedCollector] reads: a *[pool.Keyed] of any T
// (or a facade over one) whose keys are Ks.
type KeyedStatser[K comparable] interface {
	Stats() pool.Stats
	RangeKeys(f func(key K, s pool.Stats) bool)
}

// KeyedOptions name the metrics of a keyed collector and say whether it
// exports each key's figures.
type KeyedOptions[K comparable] struct {
	// Options name the metrics, as for NewPoolCollector.
	Options
	// PerKey adds the poolkit_pool_key_* series, each key's figures with
	// the label key (see NewKeyedCollector). Default false: the keyed
	// pool's totals alone.
	PerKey bool
	// MaxKeys bounds the keys exported with PerKey; the others are folded
	// into the key OtherKey. 0: DefaultMaxKeys. Negative is an error.
	MaxKeys int
	// KeyName is a key's label value. nil: fmt.Sprint(key).
	KeyName func(K) string
}

// NewKeyedCollector returns a collector of a [pool.Keyed]'s statistics.
//
// By default it exports the keyed pool's totals (k.Stats(): every key's
// figures summed, those of the keys whose state was dropped included) as
// the metrics of NewPoolCollector, with the same names and labels (pool=
// the keyed pool's Name, unless ConstLabels set "pool"): a dashboard over
// pools shows a keyed pool as one, and a keyed collector registers beside
// pool collectors. max_connections is the keyed pool's MaxSize.
//
// With o.PerKey, it exports besides, for each key, a twin of each of those
// metrics but max_connections, named poolkit_pool_key_* for poolkit_pool_*
// (poolkit_pool_key_connections{key,state}, …, the histogram
// poolkit_pool_key_blocked_acquire_seconds{key}), with the label key: the
// key's name, o.KeyName(key) or fmt.Sprint(key). The totals keep their own
// series, exact, so that no query of them changes with PerKey, and the
// twins have names of their own, so that their label key does not clash
// with the label names of pool collectors in the same registry. Each key
// has 56 series.
//
// Only the keys with state at the scrape are exported (those k.RangeKeys
// visits): a key whose state was dropped has no series from the next
// scrape on. Keys whose names are equal share one series, their figures
// summed. When more names than o.MaxKeys have state, the MaxKeys with the
// most live objects (Stats.Live) are exported, ties broken by name (the
// lesser first), and the others are folded into one series, key=OtherKey
// ("other"; a key of that name is in the fold): so a keyed pool exports at
// most MaxKeys+1 keys' series, however many keys it has seen. The fold's
// gauges are the sums of its keys'; its counters count what its keys
// counted while they were in it, accumulated from scrape to scrape, so
// that they do not fall when a key leaves it (a fall would read as a
// counter reset). Summed over the keys, the gauges are the totals'; the
// counters' rates too, but for what a key counted between its last scrape
// and the drop of its state, and around a key's moves in or out of the fold.
//
// The collector reads k.Stats, and with PerKey k.RangeKeys, once per
// scrape; with PerKey it keeps one pool.Stats per key with state between
// scrapes. A negative o.MaxKeys makes registering the collector fail with
// an error naming it.
func NewKeyedCollector[K comparable](k KeyedStatser[K], o KeyedOptions[K]) prometheus.Collector {
	if o.MaxKeys < 0 {
		return invalid{prometheus.NewInvalidDesc(fmt.Errorf("poolprom: KeyedOptions.MaxKeys must be >= 0, got %d", o.MaxKeys))}
	}
	opts := o.named(k)
	c := &keyedCollector[K]{totals: NewPoolCollector(k, opts).(poolCollector)}
	if !o.PerKey {
		return c
	}
	if o.MaxKeys == 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	families := slices.DeleteFunc(poolFamilies(), func(f family[pool.Stats]) bool { return f.whole })
	c.rangeKeys = k.RangeKeys
	c.perKey = newCollector(nil, "pool_key", opts, families, "key")
	c.blocked = blockedDesc(opts, "pool_key", "key")
	c.fold = keyfold.New(o.KeyName, o.MaxKeys)
	return c
}

// keyedCollector is the totals' collector and, with PerKey, the keys'.
type keyedCollector[K comparable] struct {
	totals poolCollector
	// With PerKey; nil without.
	rangeKeys func(func(K, pool.Stats) bool)
	perKey    *collector[pool.Stats]
	blocked   *prometheus.Desc
	fold      *keyfold.Folder[K]
}

func (c *keyedCollector[K]) Describe(ch chan<- *prometheus.Desc) {
	c.totals.Describe(ch)
	if c.fold != nil {
		c.perKey.Describe(ch)
		ch <- c.blocked
	}
}

func (c *keyedCollector[K]) Collect(ch chan<- prometheus.Metric) {
	c.totals.Collect(ch)
	if c.fold == nil {
		return
	}
	for _, g := range c.fold.Collect(c.rangeKeys) {
		c.perKey.send(ch, &g.S, g.Name)
		ch <- blockedHistogram(c.blocked, &g.S, g.Name)
	}
}

// invalid is a collector whose registration fails with its Desc's error.
type invalid struct{ desc *prometheus.Desc }

func (c invalid) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c invalid) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.NewInvalidMetric(c.desc, nil)
}
