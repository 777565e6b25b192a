package bytepool

import "time"

// Ticks returns the number of GC ticks the pool has observed.
func (p *Pool) Ticks() uint64 { return p.ticks.Load() }

// ClassSize returns the class size Get(n) uses (n <= MaxSize).
func (p *Pool) ClassSize(n int) int {
	if p.maxSize == 0 {
		return p.made().ClassSize(n)
	}
	return p.classes[p.classIndex(n)].size
}

// Plan is one class's retention plan.
type Plan struct{ Size, Depth, Spill, ExCap int }

// Split exposes the budget split.
func Split(c Config, procs int) []Plan {
	c, err := c.withDefaults()
	if err != nil {
		panic(err)
	}
	var plans []Plan
	for _, pl := range split(c, procs) {
		plans = append(plans, Plan{pl.size, pl.depth, pl.spill, pl.exCap})
	}
	return plans
}

// Allocator returns the pool's allocator.
func (p *Pool) Allocator() Allocator { return p.alloc }

// SetCycleIdleFloor sets the least idle time of the cycle rule and returns a
// function that restores it.
func SetCycleIdleFloor(d time.Duration) func() {
	old := cycleIdleFloor.Swap(int64(d))
	return func() { cycleIdleFloor.Store(old) }
}
