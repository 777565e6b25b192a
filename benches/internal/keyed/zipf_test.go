package keyed

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestZipfPicksEveryTenantInRangeAtItsShare(t *testing.T) {
	const n, draws = 100, 400_000
	z := newZipf(1, 1.1, n)
	counts := make([]int, n)
	for range draws {
		k := z.pick()
		require.True(t, k >= 0 && k < n, "tenant %d out of range", k)
		counts[k]++
	}
	for _, k := range []int{0, 1, 2, 9, 49, 99} {
		want := zipfShare(1.1, n, k) * draws
		assert.InDelta(t, want, counts[k], 0.05*want+50, "tenant %d", k)
	}
	for k := range n {
		assert.Positive(t, counts[k], "tenant %d never picked", k)
	}
	assert.Greater(t, counts[0], counts[1])
	assert.Greater(t, counts[1], counts[9])
}

func TestZipfSequenceIsFixedBySeed(t *testing.T) {
	a, b, c := newZipf(7, 1.1, 100), newZipf(7, 1.1, 100), newZipf(8, 1.1, 100)
	same, differ := true, false
	for range 1000 {
		x, y, w := a.pick(), b.pick(), c.pick()
		same = same && x == y
		differ = differ || x != w
	}
	assert.True(t, same, "the same seed gives the same tenants")
	assert.True(t, differ, "another seed gives others")
}

func TestZipfSharesSumToOne(t *testing.T) {
	var sum float64
	for k := range 100 {
		sum += zipfShare(1.1, 100, k)
	}
	assert.InDelta(t, 1, sum, 1e-9)
	// Σ k^-1.1 for k ≤ 100 is about ζ(1.1) − 100^-0.1/0.1 ≈ 4.28.
	assert.InDelta(t, 0.2338, zipfShare(1.1, 100, 0), 1e-3, "the first tenant's share of 100 at s=1.1")
}
