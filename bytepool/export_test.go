package bytepool

import (
	"time"

	"github.com/poolkit/poolkit/internal/shard"
)

// Ticks returns the number of GC ticks the pool has observed.
func (p *Pool) Ticks() uint64 { return p.ticks.Load() }

// ClassSize returns the class size Get(n) uses (n <= MaxSize).
func (p *Pool) ClassSize(n int) int {
	p.ensure()
	return p.classes[p.classIndex(n)].size
}

// Plan is what New reserves for one class: its exchange.
type Plan struct{ Size, ExCap int }

// Split exposes the exchanges' share of the budget.
func Split(c Config) []Plan {
	c, err := c.withDefaults()
	if err != nil {
		panic(err)
	}
	var plans []Plan
	for _, pl := range split(c) {
		plans = append(plans, Plan{pl.size, pl.exCap})
	}
	return plans
}

// ClassSizes returns the class sizes of a pool.
func (p *Pool) ClassSizes() []int {
	var sizes []int
	for i := range p.classes {
		sizes = append(sizes, p.classes[i].size)
	}
	return sizes
}

// Allocator returns the pool's allocator.
func (p *Pool) Allocator() Allocator { return p.alloc }

// SetCycleIdleFloor sets the least idle time of the cycle rule and returns a
// function that restores it.
func SetCycleIdleFloor(d time.Duration) func() {
	old := cycleIdleFloor.Swap(int64(d))
	return func() { cycleIdleFloor.Store(old) }
}

// MaxPending is how many replaced per-P tier sets a class keeps waiting for
// GC ticks before it releases them at once.
const MaxPending = maxPending

// RecycleHeaders says whether Buffer.Free gives NewBuffer headers back (not
// in the poolkit_debug build).
const RecycleHeaders = recycleHeaders

// SetUnpinnedHook makes f run where a Put has loaded its class's tiers but
// found no stack to use pinned, before it goes on unpinned, and returns a
// function that removes it.
func SetUnpinnedHook(f func()) (remove func()) {
	unpinnedHook.Store(&f)
	return func() { unpinnedHook.Store(nil) }
}

// ReleaseTiers replaces the per-P tiers of the class of Get(n) by ones of the
// same room, MaxPending + 1 times, so that the class releases every replaced
// set at once (resize), the tiers it had before the call included.
func (p *Pool) ReleaseTiers(n int) {
	p.trimMu.Lock()
	defer p.trimMu.Unlock()
	i := p.classIndex(n)
	cl := &p.classes[i]
	for range maxPending + 1 {
		p.resize(i, cl.depth, cl.spill)
	}
	if len(cl.replaced) != 0 {
		panic("bytepool: test: replaced tiers not released")
	}
}

// ProcID returns the id of the P the caller runs on, or -1 in the builds
// that pin nothing (race, poolkit_nolinkname).
func ProcID() int {
	pid := shard.Enter()
	shard.Exit()
	return pid
}

// HotIndex and HotSize expose the quarter-step index of a size and its
// inverse.
func HotIndex(m int) int { return hotIndex(m) }
func HotSize(i int) int  { return hotSize(i) }

// LearnWindow is how many Buffers a P learns from before it publishes a
// size, and LearnAbove how many of them may be above it.
const (
	LearnWindow = learnWindow
	LearnAbove  = learnAbove
)

// ReadyMax is the most storage a Buffer kept ready holds.
func (p *Pool) ReadyMax() int {
	p.ensure()
	return p.readyMax
}
