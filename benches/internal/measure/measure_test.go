package measure

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/benches/internal/workload"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// counting is an entry whose op counts its calls and fails every failEvery-th.
func counting(name string, calls *atomic.Int64, closed *atomic.Int64, failEvery int64) workload.Entry {
	return workload.Entry{
		Name: name, Key: "Impl=" + name,
		Setup: func() (workload.Instance, error) {
			return workload.Instance{
				Worker: func(int) workload.Op {
					return func() error {
						if n := calls.Add(1); failEvery > 0 && n%failEvery == 0 {
							return errors.New("fail")
						}
						return nil
					}
				},
				Close: func() { closed.Add(1) },
			}, nil
		},
	}
}

func fakeCase(workers int, latency bool, entries ...workload.Entry) workload.Case {
	return workload.Case{Top: "Fake", Group: "Op", Params: "X=1", Workers: workers, Unit: "a call",
		Baseline: entries[0].Name, Latency: latency, Entries: entries}
}

func TestRunAlternatesRoundsAndRunsTheAskedOps(t *testing.T) {
	var a, b, closed atomic.Int64
	c := fakeCase(3, true, counting("a", &a, &closed, 0), counting("b", &b, &closed, 0))
	got, err := Run(context.Background(), []workload.Case{c}, Options{Rounds: 3, Ops: 1000})
	require.NoError(t, err)
	require.Len(t, got, 1)
	rc := got[0]
	assert.Equal(t, "Fake/Op/X=1", rc.Name)
	assert.Equal(t, "Fake/Op", rc.Group)
	require.Len(t, rc.Contenders, 2)
	for j, k := range rc.Contenders {
		require.Len(t, k.Rounds, 3)
		for r, round := range k.Rounds {
			assert.Equal(t, r, round.Round)
			assert.Equal(t, (j-r+6)%2, round.Position, "order rotated by the round")
			assert.Equal(t, int64(1000), round.Ops)
			assert.Equal(t, int64(333), round.MinWorkerOps)
			assert.Equal(t, int64(334), round.MaxWorkerOps)
			assert.Positive(t, round.WallNs)
			assert.Positive(t, round.Batch)
			require.NotNil(t, round.Latency)
			assert.LessOrEqual(t, round.Latency.P50, round.Latency.Max)
		}
	}
	assert.Equal(t, int64(6), closed.Load(), "one fresh instance per measurement, all closed")
}

func TestRunForADurationCountsFailures(t *testing.T) {
	var a, closed atomic.Int64
	c := fakeCase(1, false, counting("a", &a, &closed, 10))
	got, err := Run(context.Background(), []workload.Case{c}, Options{Rounds: 1, Duration: 5 * time.Millisecond})
	require.NoError(t, err)
	round := got[0].Contenders[0].Rounds[0]
	assert.Positive(t, round.Ops)
	assert.Positive(t, round.Errors)
	assert.Nil(t, round.Latency, "latency not asked for")
}

func TestRunStopsWhenInterruptedAndKeepsCompletedRounds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var a, closed atomic.Int64
	slow := counting("slow", &a, &closed, 0)
	setups := 0
	inner := slow.Setup
	slow.Setup = func() (workload.Instance, error) {
		setups++
		if setups == 2 { // the second round's measurement
			cancel()
		}
		return inner()
	}
	c := fakeCase(2, true, slow)
	got, err := Run(ctx, []workload.Case{c, c}, Options{Rounds: 5, Duration: 2 * time.Millisecond})
	require.ErrorIs(t, err, ErrInterrupted)
	require.Len(t, got, 1, "the case that started keeps its rounds; the next one never ran")
	assert.Len(t, got[0].Contenders[0].Rounds, 1)
	assert.Equal(t, int64(setups), closed.Load())
}

func TestRunRejectsBadOptions(t *testing.T) {
	_, err := Run(context.Background(), nil, Options{Rounds: 0, Ops: 1})
	assert.Error(t, err)
	_, err = Run(context.Background(), nil, Options{Rounds: 1})
	assert.Error(t, err)
}

func TestRunReportsSetupErrors(t *testing.T) {
	bad := workload.Entry{Name: "bad", Setup: func() (workload.Instance, error) { return workload.Instance{}, errors.New("no") }}
	_, err := Run(context.Background(), []workload.Case{fakeCase(1, false, bad)}, Options{Rounds: 1, Ops: 10})
	assert.ErrorContains(t, err, "no")
}

func TestHistogramBucketsCoverEveryValue(t *testing.T) {
	for _, v := range []uint64{0, 1, 31, 32, 33, 63, 64, 65, 1000, 123456, 1 << 40, 1<<64 - 1} {
		i := bucket(v)
		require.Less(t, i, nBuckets)
		low, width := bounds(i)
		assert.LessOrEqual(t, low, v, "v=%d", v)
		assert.Less(t, v-low, width, "v=%d", v)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h hist
	for v := uint64(1); v <= 1000; v++ {
		h.record(v)
	}
	assert.InDelta(t, 500, h.quantile(0.5), 500*0.04)
	assert.InDelta(t, 990, h.quantile(0.99), 990*0.04)
	assert.Equal(t, 1000.0, h.quantile(1))
	var empty hist
	assert.Equal(t, 0.0, empty.quantile(0.5))
}

// A case with TimeEachOp times every op on its own; one with Fairness
// records Jain's index of the goroutines' op counts, and MinDuration
// lengthens its rounds.
func TestTimeEachOpFairnessAndMinDuration(t *testing.T) {
	var a, closed atomic.Int64
	c := fakeCase(4, true, counting("a", &a, &closed, 0))
	c.TimeEachOp, c.Fairness, c.MinDuration = true, true, 20*time.Millisecond
	got, err := Run(context.Background(), []workload.Case{c}, Options{Rounds: 1, Duration: time.Millisecond})
	require.NoError(t, err)
	require.True(t, got[0].Fairness)
	round := got[0].Contenders[0].Rounds[0]
	assert.Equal(t, 1, round.Batch)
	assert.GreaterOrEqual(t, round.WallNs, (20 * time.Millisecond).Nanoseconds())
	assert.Greater(t, round.Jain, 0.25, "at least 1/n")
	assert.LessOrEqual(t, round.Jain, 1.0)

	c.Fairness = false
	got, err = Run(context.Background(), []workload.Case{c}, Options{Rounds: 1, Ops: 100})
	require.NoError(t, err)
	assert.Zero(t, got[0].Contenders[0].Rounds[0].Jain, "recorded only where asked")
}
