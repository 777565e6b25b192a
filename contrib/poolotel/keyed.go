package poolotel

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/poolkit/poolkit/contrib/poolotel/internal/keyfold"
	"github.com/poolkit/poolkit/pool"
)

// KeyNameKey names the key of a keyed pool's per-key measurements (see
// ObserveKeyed).
const KeyNameKey = attribute.Key("poolkit.pool.key.name")

// DefaultMaxKeys is [KeyedOptions.MaxKeys]'s default.
const DefaultMaxKeys = 20

// OtherKey is the KeyNameKey value of the measurements into which
// ObserveKeyed folds the keys beyond [KeyedOptions.MaxKeys].
const OtherKey = keyfold.OtherKey

// KeyedStatser is what [ObserveKeyed] reads: a *[pool.Keyed] of any T (or a
// facade over one) whose keys are Ks.
type KeyedStatser[K comparable] interface {
	Stats() pool.Stats
	RangeKeys(f func(key K, s pool.Stats) bool)
}

// KeyedOptions name a keyed pool's measurements and say whether each key's
// figures are measured.
type KeyedOptions[K comparable] struct {
	// Options name the measurements, as for ObservePool: Name is the
	// keyed pool's (its KeyedConfig.Name when empty).
	Options
	// PerKey adds the poolkit.pool.key.* instruments, each key's figures
	// with the attribute KeyNameKey (see ObserveKeyed). Default false:
	// the keyed pool's totals alone.
	PerKey bool
	// MaxKeys bounds the keys measured with PerKey; the others are folded
	// into the key OtherKey. 0: DefaultMaxKeys. Negative is an error.
	MaxKeys int
	// KeyName is a key's KeyNameKey value. nil: fmt.Sprint(key).
	KeyName func(K) string
}

// ObserveKeyed registers, on meter, asynchronous instruments that report a
// [pool.Keyed]'s statistics at each collection.
//
// By default they are the keyed pool's totals (k.Stats(): every key's
// figures summed, those of the keys whose state was dropped included),
// measured as ObservePool measures a pool's, with the same instruments and
// attributes: the keyed pool is one pool to whatever reads them.
// db.client.connection.max is the keyed pool's MaxSize.
//
// With opt.PerKey, each key's figures are measured besides, on a twin of
// every instrument but db.client.connection.max, named
// poolkit.pool.key.connection.* for db.client.connection.* and
// poolkit.pool.key.* for poolkit.pool.* (poolkit.pool.key.connection.count,
// poolkit.pool.key.acquires, …), with the attribute [KeyNameKey]: the key's
// name, opt.KeyName(key) or fmt.Sprint(key). The totals keep their own
// instruments, exact, so that a sum over an instrument's points never
// counts a key twice. Each key has 31 points.
//
// Only the keys with state at the collection are measured (those
// k.RangeKeys visits): a key whose state was dropped is not measured from
// the next collection on. Keys whose names are equal share their points,
// their figures summed. When more names than opt.MaxKeys have state, the
// MaxKeys with the most live objects (Stats.Live) are measured, ties
// broken by name (the lesser first), and the others are folded into one
// key, OtherKey ("other"; a key of that name is in the fold): so a keyed
// pool has at most MaxKeys+1 keys' points, however many keys it has seen.
// The fold's UpDownCounters are the sums of its keys'; its Counters count
// what its keys counted while they were in it, accumulated from collection
// to collection, so that they do not fall when a key leaves it.
//
// The callback reads k.Stats, and with PerKey k.RangeKeys, once per
// collection; with PerKey it keeps one pool.Stats per key with state
// between collections. It returns an error if the keyed pool has no name
// (opt.Name and k.Name() empty), opt.MaxKeys is negative, or an instrument
// cannot be made.
func ObserveKeyed[K comparable](meter metric.Meter, k KeyedStatser[K], opt KeyedOptions[K]) (metric.Registration, error) {
	if opt.MaxKeys < 0 {
		return nil, fmt.Errorf("poolotel: KeyedOptions.MaxKeys must be >= 0, got %d", opt.MaxKeys)
	}
	o, waitTime, err := observePool(meter, k, opt.Options)
	if err != nil {
		return nil, err
	}
	attrs := o.withAttrs()
	if !opt.PerKey {
		return meter.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
			s := k.Stats()
			o.observe(ob, &s)
			ob.ObserveFloat64(waitTime, s.BlockedTime.Seconds(), attrs)
			return nil
		}, append(o.obs, waitTime)...)
	}

	var twins []instrument[pool.Stats]
	for _, in := range poolInstruments() {
		if !in.whole {
			in.name = twinName(in.name)
			twins = append(twins, in)
		}
	}
	keyed := &observer[pool.Stats]{base: o.base}
	if err := keyed.add(meter, twins); err != nil {
		return nil, err
	}
	keyWaitTime, err := meter.Float64ObservableCounter(twinName(waitTimeName), metric.WithUnit("s"), metric.WithDescription(waitTimeDesc))
	if err != nil {
		return nil, err
	}
	maxKeys := opt.MaxKeys
	if maxKeys == 0 {
		maxKeys = DefaultMaxKeys
	}
	fold := keyfold.New(opt.KeyName, maxKeys)
	instruments := slices.Concat(o.obs, []metric.Observable{waitTime}, keyed.obs, []metric.Observable{keyWaitTime})
	return meter.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		s := k.Stats()
		o.observe(ob, &s)
		ob.ObserveFloat64(waitTime, s.BlockedTime.Seconds(), attrs)
		for _, g := range fold.Collect(k.RangeKeys) {
			name := KeyNameKey.String(g.Name)
			for _, m := range keyed.series {
				ob.ObserveInt64(m.obs, m.value(&g.S), o.withAttrs(append([]attribute.KeyValue{name}, m.kv...)...))
			}
			ob.ObserveFloat64(keyWaitTime, g.S.BlockedTime.Seconds(), o.withAttrs(name))
		}
		return nil
	}, instruments...)
}

// twinName is the name of a pool instrument's per-key twin.
func twinName(name string) string {
	if rest, ok := strings.CutPrefix(name, "db.client."); ok {
		return "poolkit.pool.key." + rest
	}
	return "poolkit.pool.key." + strings.TrimPrefix(name, "poolkit.pool.")
}
