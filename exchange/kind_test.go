package exchange_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/exchange"
)

func TestNewBuildsEachKind(t *testing.T) {
	require.IsType(t, &exchange.Ring[int]{}, exchange.New[int](exchange.KindRing, 3))
	require.IsType(t, &exchange.Mutex[int]{}, exchange.New[int](exchange.KindMutex, 3))
	require.IsType(t, exchange.None[int]{}, exchange.New[int](exchange.KindNone, 0))
	require.Equal(t, 4, exchange.New[int](exchange.KindRing, 3).Cap(), "the ring rounds up")
	require.Equal(t, "mutex", exchange.KindMutex.String())
	require.False(t, exchange.Kind(7).Valid())
	require.PanicsWithValue(t, "exchange: New: unknown Kind 7", func() { exchange.New[int](exchange.Kind(7), 1) })
}
