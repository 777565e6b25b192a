package pgxmanager_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// faultDuration is how long the kill storm runs: $POOLKIT_FAULT_DURATION,
// else 2s.
func faultDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("POOLKIT_FAULT_DURATION")
	if v == "" {
		return 2 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("POOLKIT_FAULT_DURATION=%q: want a positive duration such as 2s", v)
	}
	return d
}

var errWrongResult = errors.New("wrong result")

// workload runs queries from workers goroutines until stop is closed,
// recording every failure.
type workload struct {
	queries atomic.Int64
	mu      sync.Mutex
	errs    []error
	wg      sync.WaitGroup
}

func startWorkload(p *pgxmanager.Pool, workers int, stop <-chan struct{}) *workload {
	w := &workload{}
	for g := range workers {
		w.wg.Go(func() {
			// The queries run under a context of their own: the end of the
			// run does not cut them short.
			ctx := context.Background()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				w.queries.Add(1)
				n := int64(g)*1_000_000 + int64(i)
				var got int64
				err := p.QueryRow(ctx, "SELECT $1::int8 * 2", n).Scan(&got)
				if err == nil && got != 2*n {
					err = fmt.Errorf("%w: %d * 2 = %d", errWrongResult, n, got)
				}
				if err != nil {
					w.mu.Lock()
					w.errs = append(w.errs, err)
					w.mu.Unlock()
				}
			}
		})
	}
	return w
}

func (w *workload) failures() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]error(nil), w.errs...)
}

// requireOnlyBrokenConnections fails the test unless every error is that of
// a query whose connection was terminated under it: FATAL 57P01
// (admin_shutdown), or the connection closed while the query ran.
func requireOnlyBrokenConnections(t *testing.T, errs []error) {
	t.Helper()
	for _, err := range errs {
		require.NotErrorIs(t, err, errWrongResult)
		require.NotErrorIs(t, err, pool.ErrTimeout, "only a query on a terminated backend may fail")
		require.NotErrorIs(t, err, pool.ErrClosed)
		require.NotErrorIs(t, err, pgxmanager.ErrNotReusable)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			require.Equal(t, "57P01", pgErr.Code, "only a query on a terminated backend may fail: %v", err)
		}
	}
}

// waitQuiet waits until no connection of p is being closed (closes are
// counted when Manager.Close returns, on the pool's closer goroutines).
func waitQuiet(t *testing.T, p *pgxmanager.Pool) pool.Stats {
	t.Helper()
	eventually(t, 10*time.Second, func() (bool, string) {
		s := p.Stats()
		return s.Closing == 0, fmt.Sprintf("%d connections still closing", s.Closing)
	})
	return p.Stats()
}

// While 32 goroutines run queries on a pool of 8, the test terminates the
// pool's backends (pg_terminate_backend), again and again. Only queries in
// flight on a terminated backend may fail: idle terminated connections are
// found by Recycle, and a failed query's connection is closed by
// CheckRelease, so failures never exceed the backends terminated, and each
// is a connection failure. The server never sees more than MaxSize of the
// pool's backends at once.
func TestPoolSurvivesAKillStorm(t *testing.T) {
	a := dialAdmin(t)
	name := uniqueName(t)
	const maxSize, workers = 8, 32
	p := openPool(t, name, pool.Config{MaxSize: maxSize, AcquireTimeout: 10 * time.Second, ConnectTimeout: 5 * time.Second})

	stop := make(chan struct{})
	w := startWorkload(p, workers, stop)
	var killed, rounds, maxSeen int
	sample := func() int {
		n, _ := a.backends(name)
		maxSeen = max(maxSeen, n)
		return n
	}
	for end := time.Now().Add(faultDuration(t)); time.Now().Before(end); {
		if sample() == 0 {
			time.Sleep(5 * time.Millisecond) // the pool is reconnecting: look again soon
			continue
		}
		killed += a.terminate(name)
		rounds++
		sample()
		time.Sleep(20 * time.Millisecond) // let the workload run on fresh connections
	}
	close(stop)
	w.wg.Wait()
	sample()

	s := waitQuiet(t, p)
	errs := w.failures()
	t.Logf("queries=%d rounds=%d killed=%d failed=%d maxSeen=%d created=%d closedRecycle=%d closedReleaseCheck=%d",
		w.queries.Load(), rounds, killed, len(errs), maxSeen, s.Created, s.ClosedBy[pool.CloseRecycle], s.ClosedBy[pool.CloseReleaseCheck])
	require.Positive(t, rounds, "no backend to terminate was ever seen")
	require.Greater(t, w.queries.Load(), int64(workers), "the workload barely ran")
	require.LessOrEqual(t, maxSeen, maxSize, "the server saw more of the pool's backends than MaxSize")
	requireOnlyBrokenConnections(t, errs)
	require.LessOrEqual(t, len(errs), killed, "more failed queries than terminated backends")
	require.LessOrEqual(t, int(s.ClosedBy[pool.CloseRecycle]+s.ClosedBy[pool.CloseReleaseCheck]), killed,
		"closed as broken more connections than were terminated")
}

// Every connection of the pool is terminated at once. Idle, none fails a
// query: Recycle finds each before it is handed out. Under load, only the
// queries in flight fail; once every terminated connection has been
// replaced, none does.
func TestPoolRecoversFromAMassKill(t *testing.T) {
	a := dialAdmin(t)
	name := uniqueName(t)
	const maxSize, workers = 8, 32
	p := openPool(t, name, pool.Config{MaxSize: maxSize, AcquireTimeout: 10 * time.Second, ConnectTimeout: 5 * time.Second})

	t.Run("Idle", func(t *testing.T) {
		// Fill the pool: maxSize queries that hold their connections at once.
		var wg sync.WaitGroup
		for range maxSize {
			wg.Go(func() {
				_, err := p.Exec(context.Background(), "SELECT pg_sleep(0.05)")
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		before := waitQuiet(t, p)
		require.Equal(t, maxSize, before.Idle, "the pool holds maxSize idle connections")
		require.Equal(t, maxSize, a.terminate(name))

		stop := make(chan struct{})
		w := startWorkload(p, workers, stop)
		for w.queries.Load() < 50*workers {
			time.Sleep(time.Millisecond)
		}
		close(stop)
		w.wg.Wait()
		require.Empty(t, w.failures(), "a query failed on a connection terminated while idle")
		s := waitQuiet(t, p)
		require.EqualValues(t, maxSize, s.ClosedBy[pool.CloseRecycle]-before.ClosedBy[pool.CloseRecycle], "Recycle found every terminated connection")
	})

	t.Run("UnderLoad", func(t *testing.T) {
		stop := make(chan struct{})
		w := startWorkload(p, workers, stop)
		defer func() {
			select {
			case <-stop:
			default:
				close(stop)
			}
			w.wg.Wait()
		}()
		for w.queries.Load() < 10*workers {
			time.Sleep(time.Millisecond)
		}
		before := p.Stats()
		killed := a.terminate(name)
		require.Positive(t, killed)

		// Recovered: every terminated connection has been closed (found by
		// Recycle, or refused on release after its query failed).
		eventually(t, 10*time.Second, func() (bool, string) {
			s := p.Stats()
			closed := int(s.Closed - before.Closed)
			return closed >= killed && s.Closing == 0, fmt.Sprintf("%d of %d terminated connections closed", closed, killed)
		})
		inFlight := w.failures()
		requireOnlyBrokenConnections(t, inFlight)
		require.LessOrEqual(t, len(inFlight), killed, "more failed queries than terminated backends")

		from := w.queries.Load()
		for w.queries.Load() < from+50*workers {
			time.Sleep(time.Millisecond)
		}
		close(stop)
		w.wg.Wait()
		require.Len(t, w.failures(), len(inFlight), "a query failed after the pool had recovered")
		t.Logf("killed=%d failedInFlight=%d queriesAfterRecovery=%d", killed, len(inFlight), w.queries.Load()-from)
	})
}

// A connection released inside a transaction (BEGIN through Exec, a Tx
// never ended on an acquired connection, a failed transaction not rolled
// back) is closed, never handed to the next user. The test checks on the
// server: in a transaction opened by an earlier statement, now() (the
// transaction's start) differs from statement_timestamp(); in a statement of
// its own, sent as one simple-protocol message, they are equal.
func TestPoolNeverHandsOutAnOpenTransaction(t *testing.T) {
	a := dialAdmin(t)
	name := uniqueName(t)
	const maxSize, workers, rounds = 2, 8, 50
	p := openPool(t, name, pool.Config{MaxSize: maxSize, AcquireTimeout: 10 * time.Second})
	ctx := ctxFor(t, 60*time.Second)

	var leftOpen atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range rounds {
				switch (g + i) % 4 {
				case 0: // a transaction begun through Exec and left open
					_, err := p.Exec(ctx, "BEGIN")
					if !assert.NoError(t, err) {
						return
					}
					leftOpen.Add(1)
				case 1: // a transaction on an acquired connection, released open
					l, err := p.Acquire(ctx)
					if !assert.NoError(t, err) {
						return
					}
					_, err = l.Value().Begin(ctx)
					assert.NoError(t, err)
					l.Release()
					leftOpen.Add(1)
				case 2: // a failed transaction, not rolled back
					l, err := p.Acquire(ctx)
					if !assert.NoError(t, err) {
						return
					}
					_, err = l.Value().Exec(ctx, "BEGIN")
					assert.NoError(t, err)
					_, err = l.Value().Exec(ctx, "SELECT 1/0")
					assert.Error(t, err)
					l.Release()
					leftOpen.Add(1)
				default: // the next user: must be outside any transaction
					var fresh bool
					if assert.NoError(t, p.QueryRow(ctx, "SELECT now() = statement_timestamp()", pgx.QueryExecModeSimpleProtocol).Scan(&fresh)) {
						assert.True(t, fresh, "handed a connection inside a transaction")
					}
				}
			}
		})
	}
	wg.Wait()
	require.False(t, t.Failed())
	s := waitQuiet(t, p)
	require.EqualValues(t, leftOpen.Load(), s.ClosedBy[pool.CloseReleaseCheck], "every connection released in a transaction was closed")
	// Manager.Close has returned for every refused connection; the server
	// notices the closed socket and ends the backend a moment later.
	eventually(t, 5*time.Second, func() (bool, string) {
		_, idleInTx := a.backends(name)
		return idleInTx == 0, fmt.Sprintf("%d backends idle in a transaction", idleInTx)
	})
}
