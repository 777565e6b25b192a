package measure

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/sockets"
	"github.com/poolkit/poolkit/benches/internal/workload"
)

// listener accepts connections and closes each once the client has.
func listener(t *testing.T) (addr string, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				var b [1]byte
				_, _ = c.Read(b[:]) // EOF once the client closes
				c.Close()
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String(), ln.Addr().(*net.TCPAddr).Port
}

// dialling is an entry whose op dials addr and closes the connection (the
// client closes first, so its end waits in TIME_WAIT), counting its dials.
func dialling(addr string) workload.Entry {
	return workload.Entry{Name: "dial", Key: "Impl=dial", Setup: func() (workload.Instance, error) {
		var dials atomic.Int64
		return workload.Instance{
			Worker: func(int) workload.Op {
				return func() error {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						return err
					}
					dials.Add(1)
					return c.Close()
				}
			},
			Close: func() {},
			Dials: dials.Load,
		}, nil
	}}
}

func TestRunCountsDialsAndTimeWait(t *testing.T) {
	addr, port := listener(t)
	var calls, closed atomic.Int64
	c := fakeCase(2, true, dialling(addr), counting("none", &calls, &closed, 0))
	c.TimeWaitPort = port
	got, err := Run(context.Background(), []workload.Case{c}, Options{Rounds: 2, Ops: 40})
	require.NoError(t, err)
	require.Len(t, got, 1)
	rc := got[0]
	assert.True(t, rc.Dials)
	assert.Equal(t, sockets.Available(), rc.TimeWait)
	dial, none := rc.Contenders[0], rc.Contenders[1]
	for i := range 2 {
		d := dial.Rounds[i]
		assert.Zero(t, d.Errors)
		// Calibration, warm-up (a tenth) and the round: more than the ops.
		assert.Greater(t, d.Dials, d.Ops)
		assert.Zero(t, none.Rounds[i].Dials, "an instance without Dials counts none")
		if !rc.TimeWait {
			continue
		}
		require.NotNil(t, d.TimeWait)
		require.NotNil(t, none.Rounds[i].TimeWait)
		// Each connection the client closed enters TIME_WAIT once the server's
		// FIN arrives, which may be just after the count is taken: bounded,
		// not exact.
		assert.Positive(t, d.TimeWait.Left(), "connections closed by the client wait")
		assert.LessOrEqual(t, d.TimeWait.Left(), int(d.Dials), "no more waiting sockets than dials")
		assert.Zero(t, none.Rounds[i].TimeWait.Left())
	}
}

func TestRunWithoutAPortCountsNoTimeWait(t *testing.T) {
	addr, _ := listener(t)
	got, err := Run(context.Background(), []workload.Case{fakeCase(1, false, dialling(addr))}, Options{Rounds: 1, Ops: 5})
	require.NoError(t, err)
	assert.False(t, got[0].TimeWait)
	assert.Nil(t, got[0].Contenders[0].Rounds[0].TimeWait)
	assert.True(t, got[0].Dials)
}
