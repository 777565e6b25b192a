package cacheline

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	pooled "github.com/poolkit/poolkit/internal/cacheline"
)

// The benchmarks pad with the pools' own unit: a contender's holder is kept
// as far from its neighbours as the pool keeps its per-P state.
func TestPaddingIsThePoolsUnit(t *testing.T) {
	require.Equal(t, pooled.Size, Size)
	require.Equal(t, unsafe.Sizeof(pooled.Pad{}), unsafe.Sizeof(Pad{}))
}

// Carve leaves at least Size bytes unused between its parts, and caps each
// part at n elements.
func TestCarveKeepsPartsSizeApart(t *testing.T) {
	for _, n := range []int{1, 3, 64} {
		parts := Carve[uint32](4, n)
		require.Len(t, parts, 4)
		const elem = unsafe.Sizeof(uint32(0))
		for i, p := range parts {
			require.Len(t, p, n)
			require.Equal(t, n, cap(p), "an append must not reach into a gap")
			if i == 0 {
				continue
			}
			prevEnd := uintptr(unsafe.Pointer(&parts[i-1][n-1])) + elem
			gap := uintptr(unsafe.Pointer(&p[0])) - prevEnd
			require.GreaterOrEqual(t, gap, uintptr(Size), "part %d, n=%d", i, n)
		}
	}
}
