package bytepool_test

import (
	"testing"

	"github.com/poolkit/poolkit/bytepool"
)

// FuzzGetPut checks, for any n and any foreign capacity, that Get(n) has
// length n and capacity n's class size (or exactly n above MaxSize), before
// and after Put round trips that include foreign slices.
func FuzzGetPut(f *testing.F) {
	const minSize, maxSize = 64, 1 << 20
	p, err := bytepool.New(bytepool.Config{MinSize: minSize, MaxSize: maxSize})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][2]uint32{{0, 0}, {1, 63}, {64, 64}, {65, 127}, {4096, 5000}, {maxSize, 2*maxSize - 1}, {maxSize + 1, 2 * maxSize}, {3 << 20, 100}} {
		f.Add(seed[0], seed[1])
	}
	want := func(n int) int {
		if n > maxSize {
			return n
		}
		// MinSize, then four classes per power of two k: k×5/4 … k×8/4.
		if n <= minSize {
			return minSize
		}
		k := minSize
		for 2*k < n {
			k *= 2
		}
		return (n + k/4 - 1) / (k / 4) * (k / 4)
	}
	check := func(t *testing.T, n int) []byte {
		b := p.Get(n)
		if len(b) != n || cap(b) != want(n) {
			t.Fatalf("Get(%d): len %d cap %d, want len %d cap %d", n, len(b), cap(b), n, want(n))
		}
		return b
	}
	f.Fuzz(func(t *testing.T, n32, foreignCap32 uint32) {
		n := int(n32 % (4 << 20))
		foreignCap := int(foreignCap32 % (4 << 20))
		b := check(t, n)
		p.Put(b)
		p.Put(make([]byte, foreignCap/2, foreignCap))
		b = check(t, n)
		c := check(t, n/2+1)
		p.Put(c)
		p.Put(b)
		check(t, foreignCap)
	})
}
