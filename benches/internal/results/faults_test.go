package results_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/poolkit/poolkit/benches/internal/results"
)

func TestFaultSummaryLeavesOutTheLatencyOfRoundsInWhichNothingReturned(t *testing.T) {
	r := results.FaultResult{Server: "redis", Contender: "c", Rounds: []results.FaultRound{
		{Ops: 100, P999Ns: 2e6, MaxNs: 3e6, RecoveryNs: 1e9},
		{Ops: 40, P999Ns: -1, MaxNs: -1, RecoveryNs: -1, Stuck: 32},
	}}
	s := r.Summarize()
	assert.Equal(t, results.Spread{3e6, 3e6, 3e6}, s.Max, "the round without latency is left out, not counted as -1")
	assert.Equal(t, results.Spread{2e6, 2e6, 2e6}, s.P999)
	assert.Equal(t, 1, s.NeverRecovered)
	assert.Equal(t, 32.0, s.Stuck.Max)

	none := results.FaultResult{Rounds: r.Rounds[1:]}
	row := results.FaultRow(none, true)
	assert.Equal(t, "—", row[6], "p99.9 of no operation")
	assert.Equal(t, "—", row[7], "max of no operation")
}
