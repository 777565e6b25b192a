package workload

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/poolkit/poolkit/benches/internal/contenders"
)

// Pool settings of the cases.
const (
	// hotMaxSize is MaxSize where the pool size does not matter.
	hotMaxSize = 64
	// armedTimeout is the timeout of TimeoutArmed: long enough never to fire.
	armedTimeout = time.Second
	// exchangeHold is how many objects a goroutine of the Exchange group
	// keeps out at once: twice poolkit's default per-P depth, so releases
	// spill past the per-P stack.
	exchangeHold = 8
)

// ParallelMultipliers are the goroutine counts of Pool/Parallel, in units of
// GOMAXPROCS.
var ParallelMultipliers = []int{1, 4, 16, 64}

// ParallelMaxSizes are the pool sizes of Pool/Parallel.
var ParallelMaxSizes = []int{8, 64}

// poolEntries makes one entry per object-pool contender, each running the op
// that mk builds on its instance.
func poolEntries(cfg contenders.PoolConfig, names []string, mk func(p contenders.Pool) func(i int) Op) []Entry {
	return entries(cfg, names, func(name string) (string, func(contenders.PoolConfig) (contenders.Pool, error), error) {
		c, err := contenders.PoolByName(name)
		return c.Name, c.New, err
	}, mk)
}

// allPools lists every object-pool contender; the floor comes last.
var allPools = []string{"poolkit", "puddle", "chan", "mutex", "syncpool"}

// cycle is the plain op: acquire, touch, release, under context.Background.
func cycle(p contenders.Pool) func(int) Op {
	ctx := context.Background()
	return func(int) Op { return func() error { return p.Cycle(ctx) } }
}

// cycleWithTimeout arms a fresh deadline for every acquire, as a caller of a
// pool without a timeout setting must.
func cycleWithTimeout(p contenders.Pool) func(int) Op {
	return func(int) Op {
		return func() error {
			ctx, cancel := context.WithTimeout(context.Background(), armedTimeout)
			err := p.Cycle(ctx)
			cancel()
			return err
		}
	}
}

// PoolHotPath is one goroutine acquiring and releasing, nobody else around.
func PoolHotPath() []Case {
	return []Case{{
		Top: "Pool", Group: "HotPath", Workers: 1,
		Unit: "one Acquire + Release", Baseline: "syncpool",
		Entries: poolEntries(contenders.PoolConfig{MaxSize: hotMaxSize}, hotPools, cycle),
	}}
}

// hotPools is allPools with poolkit three times: its manager without a
// check, with one (Recycle on every reuse), and its keyed pool through one
// key (a key with an idle object).
var hotPools = []string{"poolkit", "poolkit-recycle", "poolkit-keyed", "puddle", "chan", "mutex", "syncpool"}

// PoolParallel is many goroutines acquiring and releasing one pool: MaxSize
// 8 and 64, goroutines at 1×, 4×, 16× and 64× GOMAXPROCS, or workers if it
// is not 0.
func PoolParallel(workers int) []Case {
	var cases []Case
	for _, size := range ParallelMaxSizes {
		for _, g := range goroutines(workers, ParallelMultipliers) {
			cases = append(cases, Case{
				Top: "Pool", Group: "Parallel",
				Params:  fmt.Sprintf("MaxSize=%d/Goroutines=%d", size, g),
				Workers: g, Unit: "one Acquire + Release", Baseline: "syncpool", Latency: true,
				Entries: poolEntries(contenders.PoolConfig{MaxSize: size}, allPools, cycle),
			})
		}
	}
	return cases
}

// PoolTimeoutArmed is Pool/Parallel at MaxSize 8 and 4× GOMAXPROCS
// goroutines (or workers), with every acquire bounded by a timeout: through
// the pool's own setting (Via=Config: poolkit's AcquireTimeout, and the
// reference pools, which arm a timer only when they wait), or through a
// context.WithTimeout per call (Via=Context: the only way puddle offers).
// sync.Pool, the floor, has no timeout and waits for nothing.
func PoolTimeoutArmed(workers int) []Case {
	g := goroutines(workers, []int{4})[0]
	params := fmt.Sprintf("MaxSize=8/Goroutines=%d", g)
	cfg := contenders.PoolConfig{MaxSize: 8, AcquireTimeout: armedTimeout}
	return []Case{
		{
			Top: "Pool", Group: "TimeoutArmed", Params: "Via=Config/" + params,
			Workers: g, Unit: "one Acquire + Release, timeout set in the pool", Baseline: "syncpool", Latency: true,
			Entries: poolEntries(cfg, []string{"poolkit", "chan", "mutex", "syncpool"}, cycle),
		},
		{
			Top: "Pool", Group: "TimeoutArmed", Params: "Via=Context/" + params,
			Workers: g, Unit: "context.WithTimeout + Acquire + Release + cancel", Baseline: "syncpool", Latency: true,
			Entries: poolEntries(contenders.PoolConfig{MaxSize: 8}, allPools, cycleWithTimeout),
		},
	}
}

// HandOffMaxSizes are the pool sizes of Pool/HandOff.
var HandOffMaxSizes = []int{1, 2}

// PoolHandOff is 4× GOMAXPROCS goroutines (or workers) sharing a pool of one
// or two objects, each yielding (runtime.Gosched) while it holds one, so that
// nearly every acquire waits and is served by a release: what a waiter pays.
// sync.Pool, the floor, waits for nothing: it makes an object instead.
func PoolHandOff(workers int) []Case {
	g := goroutines(workers, []int{4})[0]
	var cases []Case
	for _, size := range HandOffMaxSizes {
		cases = append(cases, Case{
			Top: "Pool", Group: "HandOff", Params: fmt.Sprintf("MaxSize=%d/Goroutines=%d", size, g),
			Workers: g, Unit: "one Acquire, a yield while holding, one Release", Baseline: "syncpool", Latency: true,
			Entries: poolEntries(contenders.PoolConfig{MaxSize: size}, allPools, holdWhile(runtime.Gosched)),
		})
	}
	return cases
}

// holdWhile acquires one object, runs while while holding it, and releases
// it.
func holdWhile(while func()) func(p contenders.Pool) func(int) Op {
	return func(p contenders.Pool) func(int) Op {
		ctx := context.Background()
		return func(int) Op {
			h := p.Holder(1)
			return func() error {
				if err := h.AcquireAll(ctx); err != nil {
					return err
				}
				while()
				h.ReleaseAll()
				return nil
			}
		}
	}
}

// ExchangeKinds are poolkit's shared reservoirs.
var ExchangeKinds = []string{"ring", "mutex", "none"}

// PoolExchange compares poolkit's exchanges (ring, mutex, none) where they
// matter: each of 4× GOMAXPROCS goroutines (or workers) keeps 8 objects out
// at once, more than a per-P stack holds, so objects move between the stacks
// and the exchange. MaxSize is 64; with no exchange, the pool deepens its
// per-P stacks until every object fits. A channel pool
// is the reference.
func PoolExchange(workers int) []Case {
	g := goroutines(workers, []int{4})[0]
	size := max(64, g*exchangeHold)
	hold := func(p contenders.Pool) func(int) Op {
		ctx := context.Background()
		return func(int) Op {
			h := p.Holder(exchangeHold)
			return func() error {
				if err := h.AcquireAll(ctx); err != nil {
					return err
				}
				h.ReleaseAll()
				return nil
			}
		}
	}
	var es []Entry
	for _, kind := range ExchangeKinds {
		e := poolEntries(contenders.PoolConfig{MaxSize: size, Exchange: kind}, []string{"poolkit"}, hold)[0]
		e.Name = "poolkit " + kind
		e.Key = "Exchange=" + kind + "/Impl=poolkit"
		es = append(es, e)
	}
	es = append(es, poolEntries(contenders.PoolConfig{MaxSize: size}, []string{"chan"}, hold)...)
	return []Case{{
		Top: "Pool", Group: "Exchange",
		Params:  fmt.Sprintf("MaxSize=%d/Goroutines=%d/Hold=%d", size, g, exchangeHold),
		Workers: g, Unit: fmt.Sprintf("%d Acquires, then %d Releases", exchangeHold, exchangeHold),
		Baseline: "poolkit ring", Latency: true, Entries: es,
	}}
}

// StatsIntervals are how often the StatsOverhead reader reads the
// statistics; 0 means no reader.
var StatsIntervals = []time.Duration{0, time.Millisecond, 10 * time.Microsecond}

func statsName(d time.Duration) string {
	if d == 0 {
		return "off"
	}
	return "every" + d.String()
}

// withStatsReader renames e and, for an interval that is not 0, wraps its
// Setup so that a goroutine reads the statistics every interval while the op
// runs.
func withStatsReader(e Entry, every time.Duration) Entry {
	setup := e.Setup
	e.Name += " stats " + statsName(every)
	e.Key = "Stats=" + statsName(every) + "/" + e.Key
	if every == 0 {
		return e
	}
	e.Setup = func() (Instance, error) {
		in, err := setup()
		if err != nil {
			return in, err
		}
		if in.Stats == nil {
			in.Close()
			return in, fmt.Errorf("%s keeps no statistics", e.Name)
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			t := time.NewTicker(every)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					in.Stats()
				}
			}
		})
		closeInner := in.Close
		in.Close = func() {
			close(done)
			wg.Wait()
			closeInner()
		}
		return in, nil
	}
	return e
}

// PoolStatsOverhead is poolkit's hot path, alone and at 4× GOMAXPROCS
// goroutines (or workers), with no reader of its statistics, and with a
// goroutine reading them every millisecond or every 10 µs.
func PoolStatsOverhead(workers int) []Case {
	var cases []Case
	for _, g := range dedupe(append([]int{1}, goroutines(workers, []int{4})...)) {
		base := poolEntries(contenders.PoolConfig{MaxSize: hotMaxSize}, []string{"poolkit"}, cycle)[0]
		var es []Entry
		for _, every := range StatsIntervals {
			es = append(es, withStatsReader(base, every))
		}
		cases = append(cases, Case{
			Top: "Pool", Group: "StatsOverhead", Params: fmt.Sprintf("Goroutines=%d", g),
			Workers: g, Unit: "one Acquire + Release", Baseline: es[0].Name, Latency: g > 1, Entries: es,
		})
	}
	return cases
}

// goroutines returns workers alone if it is not 0, else each multiplier ×
// GOMAXPROCS.
func goroutines(workers int, multipliers []int) []int {
	if workers > 0 {
		return []int{workers}
	}
	var gs []int
	for _, m := range multipliers {
		gs = append(gs, m*Procs())
	}
	return gs
}
