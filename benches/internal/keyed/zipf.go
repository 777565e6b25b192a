package keyed

import (
	"math/rand/v2"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// zipf picks tenants 0 … n-1, tenant k with a probability proportional to
// (k+1)^-s: the most popular first. One goroutine owns it.
type zipf struct {
	r *rand.Rand
	z *rand.Zipf
}

// newZipf returns a picker over n tenants with exponent s (> 1), its
// sequence fixed by seed.
func newZipf(seed uint64, s float64, n int) *zipf {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return &zipf{r: r, z: rand.NewZipf(r, s, 1, uint64(n-1))}
}

// pick returns the next tenant.
func (z *zipf) pick() int { return int(z.z.Uint64()) }

// oneIn reports true once in n calls, at random, from the picker's
// sequence.
func (z *zipf) oneIn(n int) bool { return z.r.IntN(n) == 0 }

// zipfShare is the probability that a picker over n tenants with exponent s
// picks tenant k.
func zipfShare(s float64, n, k int) float64 {
	return results.KeyedSettings{Tenants: n, ZipfS: s}.Share(k)
}
