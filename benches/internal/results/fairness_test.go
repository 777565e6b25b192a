package results_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/poolkit/poolkit/benches/internal/results"
)

func TestJainIsOneWhenAllAreServedAlikeAndOneOverNForOne(t *testing.T) {
	assert.InDelta(t, 1, results.Jain([]int64{7, 7, 7, 7}), 1e-12)
	assert.InDelta(t, 0.25, results.Jain([]int64{0, 0, 40, 0}), 1e-12)
	// (1+3)² / (2 × (1+9)) = 0.8
	assert.InDelta(t, 0.8, results.Jain([]int64{1, 3}), 1e-12)
	assert.True(t, math.IsNaN(results.Jain([]int64{0, 0})))
	assert.True(t, math.IsNaN(results.Jain(nil)))
}

func TestFairnessColumnsAreMediansOverTheRounds(t *testing.T) {
	c := sample().Cases[0]
	c.Fairness = true
	k := &c.Contenders[0]
	for i, j := range []float64{0.5, 0.9, 0.7} {
		k.Rounds[i].Jain = j
		k.Rounds[i].MinWorkerOps, k.Rounds[i].MaxWorkerOps = int64(10*(i+1)), 100
	}
	s := c.Summaries()
	assert.InDelta(t, 0.7, s[0].Jain, 1e-12)
	assert.InDelta(t, 0.2, s[0].MinMax, 1e-12)
	assert.True(t, math.IsNaN(s[1].Jain), "rounds without fairness show none")

	h := results.Header(c)
	assert.Equal(t, []string{"Jain", "min/max"}, h[len(h)-4:len(h)-2])
	row := results.Row(c, s[0])
	assert.Equal(t, []string{"0.70", "0.20"}, row[len(row)-4:len(row)-2])
	assert.Equal(t, []string{"—", "—"}, results.Row(c, s[1])[len(h)-4:len(h)-2])
	assert.Contains(t, results.Describe(c), "Jain's index and min/max")

	c.Fairness = false
	assert.NotContains(t, results.Header(c), "Jain")
}
