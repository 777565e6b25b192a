package poolprom

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poolkit/poolkit/pool"
)

// keyFigures is one key's series: the key's name (OtherKey for the fold)
// and its figures.
type keyFigures struct {
	name string
	s    pool.Stats
}

// folder picks the keys a collection exports, MaxKeys at most, and folds
// the rest into one series, OtherKey (see KeyedOptions). Its gauges are the
// folded keys' sums at the collection; its counters are what the folded
// keys counted while they were folded, accumulated from one collection to
// the next, so that they never fall when a key leaves the fold (its state
// dropped, or among the MaxKeys now): a fall would read as a counter reset
// and rate() would count the fold's whole value again.
type folder[K comparable] struct {
	name func(K) string
	max  int

	mu sync.Mutex // held through a collection; guards last and folded
	// last is every name's figures at the previous collection: memory
	// follows the keys with state, as the keyed pool's own does.
	last map[string]pool.Stats
	// folded holds the fold's counters (its gauges are left zero).
	folded pool.Stats
}

func newFolder[K comparable](name func(K) string, maxKeys int) *folder[K] {
	if name == nil {
		name = func(k K) string { return fmt.Sprint(k) }
	}
	return &folder[K]{name: name, max: maxKeys}
}

// collect returns the series of the keys rangeKeys visits, grouped by
// name (keys of one name share a series): the MaxKeys with the most live
// objects, ties broken by name, then the fold if there are more names.
func (f *folder[K]) collect(rangeKeys func(func(K, pool.Stats) bool)) []keyFigures {
	f.mu.Lock()
	defer f.mu.Unlock()
	byName := make(map[string]pool.Stats, len(f.last))
	rangeKeys(func(key K, s pool.Stats) bool {
		n := f.name(key)
		if g, ok := byName[n]; ok {
			addStats(&g, &s)
			s = g
		}
		byName[n] = s
		return true
	})
	out := make([]keyFigures, 0, len(byName)+1)
	for n, s := range byName {
		out = append(out, keyFigures{n, s})
	}
	folding := len(out) > f.max
	slices.SortFunc(out, func(a, b keyFigures) int {
		if folding && (a.name == OtherKey) != (b.name == OtherKey) {
			// A key named OtherKey goes to the fold, whose name it has.
			if a.name == OtherKey {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(b.s.Live, a.s.Live); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	if folding {
		var other pool.Stats
		for _, g := range out[f.max:] {
			addGauges(&other, &g.s)
			d := g.s
			if last, ok := f.last[g.name]; ok && !fell(&g.s, &last) {
				subCounters(&d, &last) // what it counted since
			} // else it is new, or made again since: all it counted is new
			addCounters(&f.folded, &d)
		}
		addCounters(&other, &f.folded)
		out = append(out[:f.max], keyFigures{OtherKey, other})
	}
	for i := range out {
		out[i].s.MaxSize = 0 // a key's MaxSize is MaxSizePerKey: not exported
	}
	f.last = byName
	return out
}

// gauges lists s's gauges (MaxSize aside), and counters its counts and
// sums: together they are every figure of pool.Stats but MaxSize (see
// TestFoldSumsEveryFigure).
func gauges(s *pool.Stats) []*int {
	return []*int{&s.Live, &s.Idle, &s.Leased, &s.Connecting, &s.Closing, &s.Waiting}
}

func counters(s *pool.Stats) ([]*uint64, []*time.Duration) {
	n := []*uint64{&s.Acquires, &s.HandOffs, &s.Connects, &s.ConnectErrors, &s.CloseErrors,
		&s.Created, &s.Detached, &s.Waits, &s.Timeouts, &s.Cancels, &s.Blocked, &s.Leaks,
		&s.HealthChecks, &s.Closed}
	for i := range s.WaitBuckets {
		n = append(n, &s.WaitBuckets[i])
	}
	for i := range s.ClosedBy {
		n = append(n, &s.ClosedBy[i])
	}
	return n, []*time.Duration{&s.WaitTime, &s.BlockedTime}
}

func addGauges(s, o *pool.Stats) {
	sg := gauges(s)
	for i, p := range gauges(o) {
		*sg[i] += *p
	}
}

func addCounters(s, o *pool.Stats) {
	sn, sd := counters(s)
	on, od := counters(o)
	for i, p := range on {
		*sn[i] += *p
	}
	for i, p := range od {
		*sd[i] += *p
	}
}

// subCounters takes o's counters from s's; none of s's is below o's.
func subCounters(s, o *pool.Stats) {
	sn, sd := counters(s)
	on, od := counters(o)
	for i, p := range on {
		*sn[i] -= *p
	}
	for i, p := range od {
		*sd[i] -= *p
	}
}

// fell reports whether a counter of s is below o's: s's key was made
// again after o was read (or a key of its name has gone).
func fell(s, o *pool.Stats) bool {
	sn, sd := counters(s)
	on, od := counters(o)
	for i, p := range on {
		if *sn[i] < *p {
			return true
		}
	}
	for i, p := range od {
		if *sd[i] < *p {
			return true
		}
	}
	return false
}

func addStats(s, o *pool.Stats) {
	addGauges(s, o)
	addCounters(s, o)
}
