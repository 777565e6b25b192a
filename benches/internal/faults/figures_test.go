package faults

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// steady makes one successful 10 ms operation every 10 ms from from to to,
// but none during the outage [down, up), where every operation fails at
// once.
func steady(from, to, down, up time.Duration) []record {
	var rs []record
	for t := from; t < to; t += 10 * time.Millisecond {
		if t >= down && t < up {
			rs = append(rs, record{start: t, dur: time.Millisecond, failed: true})
			continue
		}
		rs = append(rs, record{start: t, dur: 10 * time.Millisecond})
	}
	return rs
}

func TestFiguresCountFailuresAfterTheFaultAndTheTimeBackToThroughput(t *testing.T) {
	// The fault lasts from 3 s to 4 s; operations keep failing until 4.5 s.
	tl := timeline{records: steady(0, 8*time.Second, 3*time.Second, 4500*time.Millisecond),
		faultStart: 3 * time.Second, faultEnd: 4 * time.Second, loadEnd: 8 * time.Second, bucket: 100 * time.Millisecond}
	r := tl.figures()
	assert.EqualValues(t, 800, r.Ops)
	assert.EqualValues(t, 150, r.Failed)
	assert.EqualValues(t, 50, r.FailedAfter, "those from 4 s to 4.5 s")
	assert.InDelta(t, 100, r.BaselineOpsPerSec, 1e-9)
	assert.Equal(t, (500 * time.Millisecond).Nanoseconds(), r.RecoveryNs, "back at 4.5 s, half a second after the end")
	assert.Len(t, r.Throughput, 80)
	assert.Equal(t, 0, r.Throughput[35])
	assert.InDelta(t, float64(10*time.Millisecond), r.MaxNs, 0)
	assert.InDelta(t, float64(10*time.Millisecond), r.P999Ns, 0)
}

func TestFiguresSayNeverWhenThroughputDoesNotComeBack(t *testing.T) {
	tl := timeline{records: steady(0, 6*time.Second, 3*time.Second, 6*time.Second),
		faultStart: 3 * time.Second, faultEnd: 4 * time.Second, loadEnd: 6 * time.Second, bucket: 100 * time.Millisecond}
	r := tl.figures()
	assert.EqualValues(t, -1, r.RecoveryNs)
	assert.EqualValues(t, 200, r.FailedAfter)
}

func TestQuantile(t *testing.T) {
	xs := make([]float64, 1000)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	assert.Equal(t, 999.0, quantile(xs, 0.999))
	assert.Equal(t, 1000.0, quantile(xs, 1))
	assert.Equal(t, 500.0, quantile(xs, 0.5))
	assert.True(t, math.IsNaN(quantile(nil, 0.5)))
}

func TestFiguresOfARoundInWhichNoOperationReturnedCanBeWritten(t *testing.T) {
	// A contender that deadlocks at the fault: operations before it, none
	// returned after it (the run counts those as stuck).
	tl := timeline{records: steady(0, 3*time.Second, time.Hour, time.Hour),
		faultStart: 3 * time.Second, faultEnd: 4 * time.Second, loadEnd: 6 * time.Second, bucket: 100 * time.Millisecond}
	r := tl.figures()
	assert.EqualValues(t, -1, r.P999Ns, "no latency after the fault")
	assert.EqualValues(t, -1, r.MaxNs)
	assert.EqualValues(t, -1, r.RecoveryNs)
	_, err := json.Marshal(r)
	assert.NoError(t, err)

	empty := timeline{faultStart: 0, faultEnd: time.Second, loadEnd: 2 * time.Second, bucket: 100 * time.Millisecond}.figures()
	assert.Zero(t, empty.BaselineOpsPerSec, "no time before the fault")
	_, err = json.Marshal(empty)
	assert.NoError(t, err)
}
