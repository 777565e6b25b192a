package pool_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/pool"
)

// The slot counters cannot go negative through the API (every test's
// cleanup checks created == closed + detached + live), so the check that
// guards them is tested on its own: a negative live, connecting or closing
// count panics with an internal-error message naming every count.
func TestNegativeSlotCountPanics(t *testing.T) {
	require.NotPanics(t, func() { pool.CheckSlotCounts(0, 0, 0) })
	require.NotPanics(t, func() { pool.CheckSlotCounts(3, 1, 2) })
	for _, c := range []struct {
		live, connecting, closing int64
		msg                       string
	}{
		{-1, 0, 0, "pool: internal error: negative slot count: live=-1 connecting=0 closing=0"},
		{2, -1, 0, "pool: internal error: negative slot count: live=2 connecting=-1 closing=0"},
		{2, 0, -1, "pool: internal error: negative slot count: live=2 connecting=0 closing=-1"},
	} {
		require.PanicsWithValue(t, c.msg, func() { pool.CheckSlotCounts(c.live, c.connecting, c.closing) })
	}
}
