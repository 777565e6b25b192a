// Package keyfold picks the keys of a keyed pool that an exporter reports,
// a bound at most, and folds the rest into one series whose counters never
// fall (decision 0015).
//
// contrib/poolprom and contrib/poolotel each hold this package, byte for
// byte the same, under their own internal/: neither module's code may
// import another module's internal packages, and .ci/run fails when the
// two copies differ. Change both.
package keyfold

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/poolkit/poolkit/pool"
)

// OtherKey is the name of the fold's series.
const OtherKey = "other"

// Figures is one key's series: the key's name (OtherKey for the fold)
// and its figures.
type Figures struct {
	Name string
	S    pool.Stats
}

// Folder picks the keys a collection exports, MaxKeys at most, and folds
// the rest into one series, OtherKey (see the exporters' KeyedOptions). Its gauges are the
// folded keys' sums at the collection; its counters are what the folded
// keys counted while they were folded, accumulated from one collection to
// the next, so that they never fall when a key leaves the fold (its state
// dropped, or among the MaxKeys now): a fall would read as a counter reset
// and rate() would count the fold's whole value again.
type Folder[K comparable] struct {
	name func(K) string
	max  int

	mu sync.Mutex // held through a collection; guards last and folded
	// last is every name's counts at the previous collection: memory
	// follows the keys with state, as the keyed pool's own does.
	last map[string]counts
	// folded is the fold's counts.
	folded counts
}

// New returns a Folder that names a key with name (nil: fmt.Sprint) and
// exports maxKeys keys at most.
func New[K comparable](name func(K) string, maxKeys int) *Folder[K] {
	if name == nil {
		name = func(k K) string { return fmt.Sprint(k) }
	}
	return &Folder[K]{name: name, max: maxKeys}
}

// Collect returns the series of the keys rangeKeys visits, grouped by
// name (keys of one name share a series): the MaxKeys with the most live
// objects, ties broken by name, then the fold if there are more names.
func (f *Folder[K]) Collect(rangeKeys func(func(K, pool.Stats) bool)) []Figures {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Figures, 0, len(f.last)+1)
	at := make(map[string]int, len(f.last)) // name → index in out
	rangeKeys(func(key K, s pool.Stats) bool {
		n := f.name(key)
		if i, ok := at[n]; ok {
			g := &out[i].S
			addGauges(g, &s)
			c := countsOf(g)
			c.add(countsOf(&s))
			c.setIn(g)
		} else {
			at[n] = len(out)
			out = append(out, Figures{n, s})
		}
		return true
	})
	last := make(map[string]counts, len(out))
	for _, g := range out {
		last[g.Name] = countsOf(&g.S)
	}
	folding := len(out) > f.max
	slices.SortFunc(out, func(a, b Figures) int {
		if folding && (a.Name == OtherKey) != (b.Name == OtherKey) {
			// A key named OtherKey goes to the fold, whose name it has.
			if a.Name == OtherKey {
				return 1
			}
			return -1
		}
		if c := cmp.Compare(b.S.Live, a.S.Live); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	if folding {
		var other pool.Stats
		for _, g := range out[f.max:] {
			addGauges(&other, &g.S)
			d := last[g.Name]
			if prev, ok := f.last[g.Name]; ok && !d.below(prev) {
				d.sub(prev) // what it counted since
			} // else it is new, or made again since: all it counted is new
			f.folded.add(d)
		}
		f.folded.setIn(&other)
		out = append(out[:f.max], Figures{OtherKey, other})
	}
	for i := range out {
		out[i].S.MaxSize = 0 // a key's MaxSize is MaxSizePerKey: not exported
	}
	f.last = last
	return out
}

// addGauges adds o's gauges (MaxSize aside) to s's: with counts, every
// figure of pool.Stats but MaxSize (see TestFoldKeepsEveryFigure).
func addGauges(s, o *pool.Stats) {
	s.Live += o.Live
	s.Idle += o.Idle
	s.Leased += o.Leased
	s.Connecting += o.Connecting
	s.Closing += o.Closing
	s.Waiting += o.Waiting
}

// counts are the counters and sums of a pool.Stats, in the order of
// countsOf.
type counts [nCounts]uint64

// nWaitBuckets is len(pool.Stats.WaitBuckets).
const nWaitBuckets = len(pool.Stats{}.WaitBuckets)

const nCounts = 14 + nWaitBuckets + len(pool.Stats{}.ClosedBy)

// countsOf returns s's counts.
func countsOf(s *pool.Stats) counts {
	c := counts{s.Acquires, s.Connects, s.ConnectErrors, s.CloseErrors,
		s.Created, s.Detached, s.Waits, s.Timeouts, s.Cancels, s.Blocked, s.Leaks,
		s.HealthChecks, s.Closed, uint64(s.BlockedTime)}
	copy(c[14:], s.WaitBuckets[:])
	copy(c[14+nWaitBuckets:], s.ClosedBy[:])
	return c
}

// setIn sets s's counts to c.
func (c *counts) setIn(s *pool.Stats) {
	s.Acquires, s.Connects, s.ConnectErrors, s.CloseErrors = c[0], c[1], c[2], c[3]
	s.Created, s.Detached, s.Waits, s.Timeouts, s.Cancels, s.Blocked, s.Leaks = c[4], c[5], c[6], c[7], c[8], c[9], c[10]
	s.HealthChecks, s.Closed = c[11], c[12]
	s.BlockedTime = time.Duration(c[13])
	copy(s.WaitBuckets[:], c[14:])
	copy(s.ClosedBy[:], c[14+nWaitBuckets:])
}

func (c *counts) add(o counts) {
	for i := range c {
		c[i] += o[i]
	}
}

// sub takes o from c; none of c's counts is below o's.
func (c *counts) sub(o counts) {
	for i := range c {
		c[i] -= o[i]
	}
}

// below reports whether one of c's counts is below o's: c's key was made
// again after o was read (or a key of its name has gone).
func (c *counts) below(o counts) bool {
	for i := range c {
		if c[i] < o[i] {
			return true
		}
	}
	return false
}
