package exchange_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/exchange"
)

// model is the reference: a plain slice with a capacity.
type model struct {
	vals             []int
	cap              int
	parked, unparked uint64
}

func (m *model) Park(v int) bool {
	if len(m.vals) == m.cap {
		return false
	}
	m.vals = append(m.vals, v)
	m.parked++
	return true
}

func (m *model) Unpark() (int, bool) {
	if len(m.vals) == 0 {
		return 0, false
	}
	v := m.vals[0]
	m.vals = m.vals[1:]
	m.unparked++
	return v, true
}

// FuzzExchangeModel decodes its input into a sequence of operations and runs
// it, on one goroutine, against Ring, Mutex and None, each checked step by
// step against a slice model of the same capacity.
//
// Input: byte 0 chooses the requested capacity (1..16). Every following byte
// is one operation, chosen by its low two bits: 0 and 1 Park (the value parked
// is the operation's index, so every value is distinct), 2 Unpark, 3 Len and
// Cap and Counts. Parks are weighted double so that inputs reach the full state.
func FuzzExchangeModel(f *testing.F) {
	f.Add([]byte{0})
	f.Add([]byte{0, 0, 2, 2, 3})                      // capacity 1: park, unpark, empty
	f.Add([]byte{2, 0, 1, 0, 1, 0, 3, 2, 2, 2, 2, 2}) // capacity 3 (ring: 4): fill, overfill, drain
	f.Add([]byte{7, 0, 0, 0, 2, 0, 0, 2, 2, 0, 3, 2}) // wrap-around at capacity 8
	f.Add([]byte{15, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		capacity := 1 + int(data[0]%16)
		ops := data[1:]
		run := func(name string, x exchange.Exchange[int]) {
			m := &model{cap: x.Cap()}
			for i, op := range ops {
				switch op & 3 {
				case 0, 1:
					require.Equal(t, m.Park(i), x.Park(i), "%s: op %d: Park(%d)", name, i, i)
				case 2:
					wantV, wantOK := m.Unpark()
					gotV, gotOK := x.Unpark()
					require.Equal(t, wantOK, gotOK, "%s: op %d: Unpark ok", name, i)
					require.Equal(t, wantV, gotV, "%s: op %d: Unpark value", name, i)
				case 3:
					require.Equal(t, len(m.vals), x.Len(), "%s: op %d: Len", name, i)
					require.Equal(t, m.cap, x.Cap(), "%s: op %d: Cap", name, i)
					parked, unparked := x.Counts()
					require.Equal(t, [2]uint64{m.parked, m.unparked}, [2]uint64{parked, unparked}, "%s: op %d: Counts", name, i)
				}
			}
			require.Equal(t, len(m.vals), x.Len(), "%s: final Len", name)
			parked, unparked := x.Counts()
			require.Equal(t, [2]uint64{m.parked, m.unparked}, [2]uint64{parked, unparked}, "%s: final Counts", name)
		}
		r := exchange.NewRing[int](capacity)
		require.GreaterOrEqual(t, r.Cap(), capacity)
		require.Less(t, r.Cap(), 2*capacity)
		run("Ring", r)
		mu := exchange.NewMutex[int](capacity)
		require.Equal(t, capacity, mu.Cap())
		run("Mutex", mu)
		run("None", exchange.None[int]{})
	})
}
