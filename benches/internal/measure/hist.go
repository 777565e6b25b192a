package measure

import "math/bits"

// hist is a log-linear histogram of latencies in nanoseconds: exact below
// 32 ns, then 32 buckets per power of two (3% resolution). Recording does
// not allocate. One goroutine owns it.
type hist struct {
	counts [nBuckets]uint64
	n      uint64
	max    uint64
}

const (
	subBits  = 5
	sub      = 1 << subBits
	nBuckets = (64 - subBits + 1) * sub
)

func bucket(v uint64) int {
	if v < sub {
		return int(v)
	}
	k := bits.Len64(v) // v in [2^(k-1), 2^k), k > subBits
	m := v >> (k - subBits - 1)
	return (k-subBits)*sub + int(m) - sub
}

// bounds returns the smallest value of bucket i and the bucket's width.
func bounds(i int) (low, width uint64) {
	if i < sub {
		return uint64(i), 1
	}
	k := i/sub + subBits
	m := uint64(i%sub + sub)
	shift := k - subBits - 1
	return m << shift, 1 << shift
}

func (h *hist) record(v uint64) {
	h.counts[bucket(v)]++
	h.n++
	h.max = max(h.max, v)
}

// quantile returns the value below which a fraction q of the samples lie:
// the middle of the bucket that holds the sample of rank ceil(q×n), and the
// exact maximum for q = 1.
func (h *hist) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	if q >= 1 {
		return float64(h.max)
	}
	rank := uint64(q * float64(h.n))
	if float64(rank) < q*float64(h.n) || rank == 0 {
		rank++
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			low, width := bounds(i)
			mid := float64(low) + float64(width-1)/2
			return min(mid, float64(h.max))
		}
	}
	return float64(h.max)
}
