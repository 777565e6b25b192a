package workload

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestOversubscribedRoundsOutlastTheSchedulersTimeSlices(t *testing.T) {
	for _, c := range PoolOversubscribed(0) {
		slices := time.Duration(c.Workers) * 10 * time.Millisecond / time.Duration(Procs())
		assert.GreaterOrEqual(t, c.MinDuration, 2*slices, c.Name())
		assert.GreaterOrEqual(t, c.MinDuration, 500*time.Millisecond, c.Name())
		assert.True(t, c.Fairness && c.TimeEachOp && c.Latency, c.Name())
	}
	assert.Len(t, PoolOversubscribed(0), len(OversubscribedCells))
	assert.Len(t, PoolOversubscribed(16), 3, "one goroutine count: the cells that differ in size or work")
}

func TestSpinWorksForAboutItsDuration(t *testing.T) {
	Spin(0)
	const d = 200 * time.Microsecond
	best := time.Hour
	for range 20 {
		t0 := time.Now()
		Spin(d)
		best = min(best, time.Since(t0))
	}
	// The calibration takes the fastest of its trials, so a loaded machine
	// can only stretch the work; the best of twenty is near d.
	assert.Greater(t, best, d/2)
	assert.Less(t, best, 20*d)
}
