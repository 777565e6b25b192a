package resp_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/examples/redis/resp"
	"github.com/poolkit/poolkit/internal/testutil/itest"
	"github.com/poolkit/poolkit/pool"
)

// admin is a plain connection (no pool) for watching and killing a test's
// connections on the server.
type admin struct {
	t *testing.T
	c *resp.Conn
}

// dialAdmin connects to the server at $POOLKIT_REDIS_ADDR (skipping the test
// if unset) and fails the test if it does not answer.
func dialAdmin(t *testing.T) (addr string, a *admin) {
	t.Helper()
	addr = itest.RedisAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := resp.Manager{Addr: addr, Name: itest.UniqueName(t) + "-admin"}.Connect(ctx)
	require.NoError(t, err, "Redis at %s=%s does not answer", itest.EnvRedisAddr, addr)
	t.Cleanup(func() { c.Close() })
	return addr, &admin{t: t, c: c}
}

// clientIDs returns the ids of the server's clients named name (CLIENT LIST,
// filtered here: Redis has no filter by name).
func (a *admin) clientIDs(name string) []string {
	a.t.Helper()
	ids, err := a.tryClientIDs(name)
	require.NoError(a.t, err)
	return ids
}

// tryClientIDs is clientIDs for goroutines other than the test's.
func (a *admin) tryClientIDs(name string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := a.c.Do(ctx, "CLIENT", "LIST", "TYPE", "normal")
	if err != nil {
		return nil, err
	}
	var ids []string
	for line := range strings.SplitSeq(r.Str, "\n") {
		var id string
		named := false
		for f := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "id":
				id = v
			case "name":
				named = v == name
			}
		}
		if named && id != "" {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// kill kills the clients with these ids and returns how many the server
// found (a client may have gone already).
func (a *admin) kill(ids []string) int {
	a.t.Helper()
	n := 0
	for _, id := range ids {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := a.c.Do(ctx, "CLIENT", "KILL", "ID", id)
		cancel()
		var se resp.Error
		if errors.As(err, &se) { // "No such client": it went away already
			continue
		}
		require.NoError(a.t, err)
		n++
	}
	return n
}

// waitGone polls until the server lists no client named name.
func (a *admin) waitGone(name string) {
	a.t.Helper()
	itest.Eventually(a.t, 5*time.Second, func() (bool, string) {
		ids := a.clientIDs(name)
		return len(ids) == 0, strconv.Itoa(len(ids)) + " connections named " + name + " still open"
	})
}

func TestClientRunsCommandsOnRedis(t *testing.T) {
	addr, a := dialAdmin(t)
	name := itest.UniqueName(t)
	c, err := resp.NewClient(resp.Manager{Addr: addr, Name: name}, pool.Config{MaxSize: 2})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key := "poolkit:test:" + name

	require.NoError(t, c.Ping(ctx))
	_, ok, err := c.Get(ctx, key)
	require.NoError(t, err)
	require.False(t, ok, "no such key yet")
	require.NoError(t, c.Set(ctx, key, "v1"))
	v, ok, err := c.Get(ctx, key)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "v1", v)

	// An error reply is returned as resp.Error and keeps the connection.
	_, err = c.Incr(ctx, key)
	var se resp.Error
	require.ErrorAs(t, err, &se)
	require.NotErrorIs(t, err, resp.ErrBroken)
	n, err := c.Del(ctx, key)
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	for want := int64(1); want <= 3; want++ {
		got, err := c.Incr(ctx, key)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err = c.Del(ctx, key)
	require.NoError(t, err)

	require.Len(t, a.clientIDs(name), 1, "one goroutine, one connection, named")
	// Closes are counted when Manager.Close returns, on the pool's closer
	// goroutines; Close returns once every one has.
	require.NoError(t, c.Close(ctx))
	s := c.Stats()
	require.Zero(t, s.ClosedBy[pool.CloseDestroy], "no connection was destroyed")
	require.Zero(t, c.Retries())
	a.waitGone(name)
}

// While 32 goroutines run commands, the test kills its pool's connections
// from the server side, again and again. Each goroutine runs rounds of SET
// and GET on its own key and INCR on a shared counter.
//
// What may fail, and the bound the test checks: a command in flight on a
// killed connection fails (ErrBroken) and is retried once on another
// connection; it fails for good only if the retry's connection is killed
// too. Every failed attempt destroys the connection it ran on, so failed
// attempts (retries, plus final failures of retries) never exceed the
// connections killed; final failures are rare and must all be ErrBroken.
// Idle killed connections are caught by Recycle's peek without a failed
// command. INCR is at-least-once: the counter ends between the INCRs that
// succeeded and those plus the failed attempts.
func TestClientSurvivesServerSideKills(t *testing.T) {
	addr, a := dialAdmin(t)
	name := itest.UniqueName(t)
	const (
		maxSize = 8
		workers = 32
	)
	c, err := resp.NewClient(
		resp.Manager{Addr: addr, Name: name, DialTimeout: 5 * time.Second},
		pool.Config{MaxSize: maxSize, AcquireTimeout: 10 * time.Second},
	)
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			c.Close(context.Background())
		}
	}()
	prefix := "poolkit:test:" + name + ":"
	counter := prefix + "counter"

	ctx, cancel := context.WithTimeout(context.Background(), itest.FaultDuration(t))
	defer cancel()
	cmdCtx := context.Background() // commands are not cut short by the end of the run

	var (
		rounds, incrOK, failed atomic.Int64
		errMu                  sync.Mutex
		firstErrs              []error
	)
	// A worker runs rounds of SET own, GET own (which must return what the
	// SET stored), INCR counter; a failed command ends its round.
	round := func(own, v string) error {
		if err := c.Set(cmdCtx, own, v); err != nil {
			return err
		}
		got, _, err := c.Get(cmdCtx, own)
		if err != nil {
			return err
		}
		if got != v {
			return errors.New("GET " + own + " = " + got + ", want " + v)
		}
		if _, err := c.Incr(cmdCtx, counter); err != nil {
			return err
		}
		incrOK.Add(1)
		return nil
	}
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			own := prefix + strconv.Itoa(g)
			for i := 0; ctx.Err() == nil; i++ {
				rounds.Add(1)
				if err := round(own, strconv.Itoa(i)); err != nil {
					failed.Add(1)
					errMu.Lock()
					firstErrs = append(firstErrs, err)
					errMu.Unlock()
				}
			}
		})
	}

	// Sample, on a second admin connection, how many connections the server
	// holds for the test, all the while.
	_, watcher := dialAdmin(t)
	var maxSeen, samples atomic.Int64
	var sampleErr error
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for ctx.Err() == nil {
			ids, err := watcher.tryClientIDs(name)
			if err != nil {
				sampleErr = err
				return
			}
			maxSeen.Store(max(maxSeen.Load(), int64(len(ids))))
			samples.Add(1)
			time.Sleep(time.Millisecond) // a light load on a shared server
		}
	}()

	// Kill the test's connections, round after round.
	var killed, killRounds int
	for ctx.Err() == nil {
		ids := a.clientIDs(name)
		if len(ids) == 0 {
			time.Sleep(itest.PollInterval) // the pool is reconnecting: look again soon
			continue
		}
		killed += a.kill(ids)
		killRounds++
		// Let the workload run on fresh connections for a moment.
		time.Sleep(20 * time.Millisecond)
	}
	wg.Wait()
	<-sampled
	require.NoError(t, sampleErr, "sampling CLIENT LIST")

	require.LessOrEqual(t, maxSeen.Load(), int64(maxSize), "the server saw more of the test's connections than MaxSize")
	require.Positive(t, killRounds, "no connection to kill was ever seen")
	require.Greater(t, rounds.Load(), int64(workers), "the workload barely ran")
	for _, err := range firstErrs {
		require.ErrorIs(t, err, resp.ErrBroken, "only a command on a killed connection may fail")
	}

	n, _, err := c.Get(cmdCtx, counter)
	require.NoError(t, err)
	got, err := strconv.ParseInt(n, 10, 64)
	require.NoError(t, err)
	keys := []string{counter}
	for g := range workers {
		keys = append(keys, prefix+strconv.Itoa(g))
	}
	_, err = c.Del(cmdCtx, keys...)
	require.NoError(t, err)

	// Closes are counted when Manager.Close returns, on the pool's closer
	// goroutines; Close returns once every one has: the counts are final.
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelClose()
	require.NoError(t, c.Close(closeCtx))
	closed = true
	s := c.Stats()
	require.Zero(t, s.Live)
	t.Logf("rounds=%d (3 commands each) killRounds=%d killed=%d retries=%d failed=%d samples=%d maxSeen=%d created=%d closedRecycle=%d closedDestroy=%d",
		rounds.Load(), killRounds, killed, c.Retries(), failed.Load(), samples.Load(), maxSeen.Load(), s.Created, s.ClosedBy[pool.CloseRecycle], s.ClosedBy[pool.CloseDestroy])

	attemptsFailed := int64(c.Retries()) + failed.Load()
	require.LessOrEqual(t, attemptsFailed, int64(killed), "more failed attempts than killed connections")
	require.LessOrEqual(t, 2*failed.Load(), attemptsFailed, "a command failed without its retry")
	require.EqualValues(t, attemptsFailed, s.ClosedBy[pool.CloseDestroy], "the client destroys exactly the connections that broke")
	require.GreaterOrEqual(t, got, incrOK.Load(), "an INCR that succeeded is missing")
	require.LessOrEqual(t, got, incrOK.Load()+attemptsFailed, "more INCRs than attempts")
	a.waitGone(name)
}
