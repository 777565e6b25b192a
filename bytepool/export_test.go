package bytepool

import "time"

// Ticks returns the number of GC ticks the pool has observed.
func (p *Pool) Ticks() uint64 { return p.ticks.Load() }

// ClassSize returns the class size Get(n) uses (n <= MaxSize).
func (p *Pool) ClassSize(n int) int { return p.classes[p.classIndex(n)].size }

// Split exposes the budget split.
func Split(c Config, procs int) ([]int, []int, []int) {
	c, err := c.withDefaults()
	if err != nil {
		panic(err)
	}
	var sz, d, e []int
	for _, pl := range split(c, procs) {
		sz, d, e = append(sz, pl.size), append(d, pl.depth), append(e, pl.exCap)
	}
	return sz, d, e
}

// Allocator returns the pool's allocator.
func (p *Pool) Allocator() Allocator { return p.alloc }

// SetCycleIdleFloor sets the least idle time of the cycle rule and returns a
// function that restores it.
func SetCycleIdleFloor(d time.Duration) func() {
	old := cycleIdleFloor.Swap(int64(d))
	return func() { cycleIdleFloor.Store(old) }
}
