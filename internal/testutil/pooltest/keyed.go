package pooltest

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// KeyedName is the name of the keyed pools of NewKeyed.
const KeyedName = "tenants"

// KeyedMaxSize is their MaxSize.
const KeyedMaxSize = 64

// NewKeyed returns a keyed pool named KeyedName, of MaxSize KeyedMaxSize,
// whose connects succeed at once, closed when the test ends. It must run
// in a synctest bubble, as Held.Destroy settles it.
func NewKeyed(t *testing.T) *pool.Keyed[string, int] {
	t.Helper()
	requireBubble(t)
	k, err := pool.NewKeyed[string, int](manager.KeyedFuncs[string, int]{
		ConnectFunc: func(context.Context, string) (int, error) { return 1, nil },
	}, pool.KeyedConfig{MaxSize: KeyedMaxSize, PerKey: pool.Config{Name: KeyedName}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, k.Close(context.Background())) })
	return k
}

// Held is the leases of one Hold.
type Held struct {
	leases []pool.Lease[int]
	gone   bool // destroyed
}

// Hold acquires n objects of key and keeps them leased until Destroy, or
// the test's end, which releases them (before the keyed pool's Close, its
// clean-up having been registered first).
func Hold(t *testing.T, k *pool.Keyed[string, int], key string, n int) *Held {
	t.Helper()
	h := &Held{}
	for range n {
		l, err := k.Acquire(context.Background(), key)
		require.NoError(t, err)
		h.leases = append(h.leases, l)
	}
	t.Cleanup(func() {
		if !h.gone {
			for _, l := range h.leases {
				l.Release()
			}
		}
	})
	return h
}

// Destroy destroys h's leases and waits for their closes, and so for the
// drop of their key's state if they were its last objects.
func (h *Held) Destroy() {
	for _, l := range h.leases {
		l.Destroy()
	}
	h.gone = true
	synctest.Wait()
}
