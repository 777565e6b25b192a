package pgxmanager_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// pingingPool returns a pool of one connection whose every reuse pings
// (ShouldPing: always), over faultConns, and the first connection's
// faultConn once it is made. Each of opts may change the Config first.
func pingingPool(t *testing.T, pingTimeout time.Duration, opts ...func(*pgxmanager.Config)) (*pgxmanager.Pool, *pgx.Conn, *faultConn) {
	t.Helper()
	cfg := config(t, uniqueName(t))
	conns := dialFaulty(cfg)
	cfg.ShouldPing = func(context.Context, pgxmanager.ShouldPingParams) bool { return true }
	cfg.PingTimeout = pingTimeout
	for _, o := range opts {
		o(&cfg)
	}
	p, err := pgxmanager.OpenConfig(&pgxmanager.PoolConfig{Config: cfg, Pool: pool.Config{MaxSize: 1}})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, p.Close(ctx))
	})
	l, err := p.Acquire(ctxFor(t, 10*time.Second))
	require.NoError(t, err)
	c := l.Value()
	l.Release()
	return p, c, <-conns
}

// cancelledDuringPing runs an Acquire whose context is cancelled while its
// ping waits for the server (whose reply fc holds back), and returns its
// error. The Acquire must return while the reply is still held.
func cancelledDuringPing(t *testing.T, p *pgxmanager.Pool, fc *faultConn) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	writes := fc.writes.Load()
	go func() {
		l, err := p.Acquire(ctx)
		if err == nil {
			l.Release()
		}
		done <- err
	}()
	eventually(t, 10*time.Second, func() (bool, string) {
		return fc.writes.Load() > writes && fc.reading.Load() > 0, "the ping was not sent"
	})
	cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("a cancelled Acquire waited for its ping")
		return nil
	}
}

// pgxpool lets a ping whose acquirer gave up finish without it, and keeps
// the connection if the server answers: an acquirer that gives up during a
// ping costs no connection. The next Acquire gets the same connection.
func TestCancelledAcquireDuringPingKeepsTheConnection(t *testing.T) {
	p, first, fc := pingingPool(t, 10*time.Second)
	release := fc.holdReads()
	err := cancelledDuringPing(t, p, fc)
	require.ErrorIs(t, err, context.Canceled)
	release() // the server's answer arrives after the acquirer left

	l, err := p.Acquire(ctxFor(t, 10*time.Second))
	require.NoError(t, err)
	assert.Same(t, first, l.Value(), "the connection whose ping outlived its acquirer is handed out again")
	var n int
	require.NoError(t, l.Value().QueryRow(ctxFor(t, 5*time.Second), "SELECT 1").Scan(&n))
	l.Release()
	s := p.Stats()
	assert.EqualValues(t, 1, s.Connects, "no connection was made to replace it")
	assert.Zero(t, s.Closed)
	assert.EqualValues(t, 1, fc.maxReading.Load(), "two parties read the connection at once")
}

// An Acquire that comes while an earlier acquirer's ping still runs waits
// for that ping before anything else touches the connection: the
// connection is never used by two parties.
func TestAcquireWaitsForThePingItsPredecessorLeft(t *testing.T) {
	p, first, fc := pingingPool(t, 10*time.Second)
	release := fc.holdReads()
	require.ErrorIs(t, cancelledDuringPing(t, p, fc), context.Canceled)

	got := make(chan *pgx.Conn, 1)
	go func() {
		l, err := p.Acquire(context.Background())
		if !assert.NoError(t, err) {
			got <- nil
			return
		}
		got <- l.Value()
		l.Release()
	}()
	// The second acquirer takes the idle connection (it counts as leased
	// from then on) and, in Recycle, waits for the first ping's answer.
	eventually(t, 10*time.Second, func() (bool, string) {
		return p.Stats().Leased == 1, "the second Acquire has not taken the connection"
	})
	release()
	select {
	case c := <-got:
		assert.Same(t, first, c)
	case <-time.After(30 * time.Second):
		t.Fatal("the second Acquire never got the connection")
	}
	assert.EqualValues(t, 1, fc.maxReading.Load(), "two parties read the connection at once")
	assert.EqualValues(t, 1, p.Stats().Connects)
}

// A ping that the server never answers ends at PingTimeout, without its
// acquirer; pgconn closes the connection then, and the pool never hands it
// out: the next Acquire refuses it (manager.ErrBroken, whatever its
// context) and connects another.
func TestStalledPingClosesTheConnectionWithoutItsAcquirer(t *testing.T) {
	p, first, fc := pingingPool(t, 200*time.Millisecond)
	fc.swallow.Store(true) // the ping never reaches the server
	require.ErrorIs(t, cancelledDuringPing(t, p, fc), context.Canceled)

	l, err := p.Acquire(ctxFor(t, 10*time.Second))
	require.NoError(t, err)
	assert.NotSame(t, first, l.Value(), "a connection whose ping failed was handed out")
	assert.True(t, first.IsClosed())
	var n int
	require.NoError(t, l.Value().QueryRow(ctxFor(t, 5*time.Second), "SELECT 1").Scan(&n))
	l.Release()
	s := p.Stats()
	assert.EqualValues(t, 2, s.Connects)
	assert.EqualValues(t, 1, s.ClosedBy[pool.CloseRecycle])
}

// Closing the pool cuts short a ping that an acquirer left and the server
// has not answered: Close does not wait for PingTimeout (a minute here; the
// cleanup's bound is 10 s). The cut is a forced close, not a close error,
// and BeforeClose still runs, once the ping is over.
func TestCloseCutsShortALeftPing(t *testing.T) {
	var hooked atomic.Int32
	p, first, fc := pingingPool(t, time.Minute, func(cfg *pgxmanager.Config) {
		cfg.BeforeClose = func(*pgx.Conn) { hooked.Add(1) }
	})
	release := fc.holdReads()
	defer release()
	require.ErrorIs(t, cancelledDuringPing(t, p, fc), context.Canceled)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Close(ctx))
	assert.True(t, first.IsClosed())
	assert.EqualValues(t, 1, hooked.Load(), "BeforeClose runs on a connection whose ping was cut")
	assert.Zero(t, p.Stats().CloseErrors, "the cut Close made is no close error")
	assert.EqualValues(t, 1, p.Stat().ForcedCloseCount(), "the cut is a forced close")
	assert.EqualValues(t, 1, fc.maxReading.Load(), "two parties read the connection at once")
}

// A ping that outlived its acquirer and that the server answered leaves a
// good connection, which Close closes as any other: BeforeClose on the open
// socket, then the goodbye (a Terminate reaches the socket), with no close
// error and no forced close.
func TestCloseAfterAnAnsweredLeftPingSaysGoodbye(t *testing.T) {
	socketOpen := make(chan bool, 1) // in BeforeClose
	p, first, fc := pingingPool(t, 10*time.Second, func(cfg *pgxmanager.Config) {
		cfg.BeforeClose = func(c *pgx.Conn) {
			select {
			case <-c.PgConn().Conn().(*faultConn).closed:
				socketOpen <- false
			default:
				socketOpen <- true
			}
		}
	})
	release := fc.holdReads()
	require.ErrorIs(t, cancelledDuringPing(t, p, fc), context.Canceled)
	answered := pgxmanager.ParkedPing(p, first)
	require.NotNil(t, answered, "no ping is parked on the connection")
	release()
	select {
	case <-answered:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never answered the left ping")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, p.Close(ctx))
	assert.True(t, first.IsClosed())
	select {
	case open := <-socketOpen:
		assert.True(t, open, "BeforeClose ran on a connection whose socket was already closed")
	default:
		t.Fatal("BeforeClose did not run")
	}
	assert.EqualValues(t, 1, fc.terminates.Load(), "no goodbye reached the socket")
	assert.Zero(t, p.Stats().CloseErrors)
	assert.Zero(t, p.Stat().ForcedCloseCount())
}

// A connection that pgconn has closed is refused by Recycle with an error
// matching manager.ErrBroken even when the acquirer's context has ended:
// the pool closes it rather than leave it idle.
func TestRecycleReportsAClosedConnectionBroken(t *testing.T) {
	m := newManager(t, config(t, uniqueName(t)))
	c := connect(t, m)
	require.NoError(t, c.Close(context.Background()))
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	err := m.Recycle(ended, c, manager.Metrics{LastUsed: time.Now().Add(-time.Hour)})
	require.ErrorIs(t, err, manager.ErrBroken)
	require.ErrorIs(t, err, pgxmanager.ErrNotReusable)
	require.False(t, errors.Is(err, context.Canceled), "the refusal is the connection's, not the context's")
}
