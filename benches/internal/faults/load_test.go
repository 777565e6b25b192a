package faults

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// TestRoundGoesOnWithoutWorkersAContenderDeadlocked: workers that never
// return once the contender is closed (a deadlock inside it) are counted,
// and the round's records are those of the workers that returned.
func TestRoundGoesOnWithoutWorkersAContenderDeadlocked(t *testing.T) {
	forever := make(chan struct{})
	defer close(forever) // the deadlocked workers go at the end of the test
	var calls atomic.Int64
	c := client{op: func(context.Context) error {
		if calls.Add(1) <= 2 {
			<-forever // two of the three workers' first ops never return
			return nil
		}
		time.Sleep(time.Millisecond)
		return nil
	}}
	l := startLoad(c, results.FaultSettings{Workers: 3, DeadlineNs: int64(time.Second)})
	time.Sleep(20 * time.Millisecond)
	require.Equal(t, 2, l.stop(10*time.Millisecond), "stuck in flight")
	require.Equal(t, 2, l.wait(10*time.Millisecond), "never returned")
	recs := l.records()
	require.NotEmpty(t, recs, "the returned worker's records")
	require.Less(t, int64(len(recs)), calls.Load(), "the deadlocked workers' ops are not among them")
	require.Empty(t, l.firstError())
}
