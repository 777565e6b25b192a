package keyed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// Settings returns the settings of a published run: 100 tenants picked by
// a Zipf law of exponent 1.1, 64 goroutines, a server of max_connections
// 40 (37 for the clients), a keyed pool of 30 with 4 per tenant, 20 s per
// contender and 2 rounds: about two and a half minutes in all. A tenant's
// p99 counts from 20 queries, so that the tenants a slow pool serves
// rarely still have one.
func Settings() results.KeyedSettings {
	return results.KeyedSettings{
		Tenants: 100, Workers: 64, ZipfS: 1.1,
		MaxConnections: 40, SuperuserReserved: 2,
		MaxSize: 30, MaxSizePerKey: 4,
		DurationNs: int64(20 * time.Second), SleepNs: int64(time.Millisecond), DeadlineNs: int64(5 * time.Second),
		PollNs: int64(20 * time.Millisecond), MinSamples: 20, Rounds: 2,
	}
}

// SmokeSettings are Settings with a short run and one round: a check that
// the case runs end to end, whose figures mean little.
func SmokeSettings() results.KeyedSettings {
	s := Settings()
	s.DurationNs, s.Rounds = int64(time.Second), 1
	return s
}

// PublishOptions are the published run's: every case, on the private
// server.
func PublishOptions() Options { return Options{Settings: Settings(), Split: SplitSettings()} }

// SmokeOptions are a smoke run's: every case, cut short.
func SmokeOptions() Options { return Options{Settings: SmokeSettings(), Split: SmokeSplitSettings()} }

// CaseCrowded is the crowded case's name: 100 tenants on a server with
// fewer connections than tenants.
const CaseCrowded = "crowded"

// CaseNames are the keyed mode's cases, in the order Run runs them.
var CaseNames = []string{CaseCrowded, CaseSteady, CaseShifting}

// Options say what Run runs.
type Options struct {
	// Settings shape the crowded case and the private server's
	// max_connections.
	Settings results.KeyedSettings
	// Split shapes the split cases; its ShiftNs is the shifting case's
	// (the steady case's is 0).
	Split results.KeyedSplitSettings
	// Cases names the cases to run, of CaseNames; nil runs them all.
	Cases []string
	// DSN, if not empty, names the server the split cases run on instead
	// of the private one; its user must be a superuser, and the cases make
	// their tenant databases on it and drop them after.
	DSN string
	// Progress, if not nil, gets a line per run.
	Progress io.Writer
}

// runs reports whether opt runs the case called name.
func (opt Options) runs(name string) bool {
	return opt.Cases == nil || slices.Contains(opt.Cases, name)
}

// splits are the split cases opt runs, in order.
func (opt Options) splits() []string {
	var out []string
	for _, name := range []string{CaseSteady, CaseShifting} {
		if opt.runs(name) {
			out = append(out, name)
		}
	}
	return out
}

// Estimate is about how long Run takes with opt: the server and its
// tenants, then every contender of every case each round, with the wait
// for its connections to go.
func Estimate(opt Options) time.Duration {
	var d time.Duration
	s := opt.Settings
	if opt.runs(CaseCrowded) {
		d += 5*time.Second + time.Duration(s.Tenants)*100*time.Millisecond
		d += time.Duration(s.Rounds*len(contenders)) * (time.Duration(s.DurationNs) + 2*time.Second)
	}
	if n := len(opt.splits()); n > 0 {
		d += 5*time.Second + time.Duration(opt.Split.Tenants)*100*time.Millisecond
		d += time.Duration(n*opt.Split.Rounds*len(splitContenders)) * (time.Duration(opt.Split.DurationNs) + time.Second)
	}
	return d
}

// ErrInterrupted is returned, with what was measured so far, when ctx ends
// during Run.
var ErrInterrupted = errors.New("keyed: interrupted")

// Run runs the cases opt names: it starts the private server where a case
// runs on it, runs every contender of each case each round, in an order
// rotated by the round, and stops the server (and drops the databases it
// made on opt.DSN's). A server that cannot be started or reached is
// skipped, with the reason in the result.
func Run(ctx context.Context, opt Options) (*results.Keyed, error) {
	out := &results.Keyed{}
	crowded, splits := opt.runs(CaseCrowded), opt.splits()
	var srv *server
	var srvErr error
	if crowded || len(splits) > 0 && opt.DSN == "" {
		n := 0
		if crowded {
			n = opt.Settings.Tenants
		}
		if len(splits) > 0 && opt.DSN == "" {
			n = max(n, opt.Split.Tenants)
		}
		st := opt.Settings
		if st.MaxConnections == 0 { // the split cases alone
			st = Settings()
		}
		t0 := time.Now()
		srv, srvErr = startServer(ctx, st, n)
		if ctx.Err() != nil {
			if srv != nil {
				_ = srv.close()
			}
			return out, ErrInterrupted
		}
		if srv != nil {
			defer srv.close()
		}
		if crowded {
			out.Settings = opt.Settings
			if srvErr != nil {
				out.Skipped = append(out.Skipped, results.Skip{Server: "postgres", Reason: srvErr.Error()})
			} else {
				out.Server, out.SetupNs = srv.describe(), time.Since(t0).Nanoseconds()
				if err := runCrowded(ctx, srv, opt, out); err != nil {
					return out, err
				}
			}
		}
	}
	if len(splits) == 0 {
		return out, nil
	}
	t, err := splitTarget(ctx, srv, srvErr, opt)
	if ctx.Err() != nil {
		if t != nil {
			_ = t.drop()
		}
		return out, ErrInterrupted
	}
	if err != nil {
		for _, name := range splits {
			out.Splits = append(out.Splits, results.KeyedSplit{Name: name, Settings: caseSettings(name, opt.Split), Baseline: splitBaseline,
				Skipped: []results.Skip{{Server: "postgres", Reason: err.Error()}}})
		}
		return out, nil
	}
	err = runSplits(ctx, t, splits, opt, out)
	if derr := t.drop(); err == nil && derr != nil {
		err = fmt.Errorf("keyed: %w", derr)
	}
	return out, err
}

// splitTarget is where the split cases run: on opt.DSN's server if set,
// else on the private one (srv, or the error that kept it from starting).
func splitTarget(ctx context.Context, srv *server, srvErr error, opt Options) (*target, error) {
	if opt.DSN != "" {
		return givenTarget(ctx, opt.DSN, opt.Split.Tenants)
	}
	if srvErr != nil {
		return nil, srvErr
	}
	return privateTarget(srv, opt.Split.Tenants), nil
}

// runSplits runs the split cases called names on t into out.
func runSplits(ctx context.Context, t *target, names []string, opt Options, out *results.Keyed) error {
	if err := t.settle(ctx); err != nil {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		return fmt.Errorf("keyed: %w", err)
	}
	connectNs, err := t.connectCost(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		return fmt.Errorf("keyed: timing a connect: %w", err)
	}
	for _, name := range names {
		s := newSplitRunner(t, name, opt.Split, connectNs)
		s.progress = func(k splitContender, r results.KeyedSplitRound) { splitProgress(opt, s.out, k, r) }
		var err error
		for round := range s.out.Settings.Rounds {
			if err = s.round(ctx, round); err != nil {
				break
			}
		}
		out.Splits = append(out.Splits, s.out)
		if err != nil {
			return err
		}
	}
	return nil
}

// runCrowded runs the crowded case on srv into out.
func runCrowded(ctx context.Context, srv *server, opt Options, out *results.Keyed) error {
	st := opt.Settings
	var err error
	if out.ConnectNs, err = srv.connectCost(ctx, time.Duration(st.SleepNs)); err != nil {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		return fmt.Errorf("keyed: timing a connect: %w", err)
	}
	for round := range st.Rounds {
		for pos := range contenders {
			k := contenders[(pos+round)%len(contenders)]
			if err := srv.settle(ctx); err != nil {
				if ctx.Err() != nil {
					return ErrInterrupted
				}
				return fmt.Errorf("keyed: before %s: %w", k.name, err)
			}
			r, err := runOne(ctx, srv, k, round, st)
			if errors.Is(err, ErrInterrupted) {
				return err
			}
			if err != nil {
				return fmt.Errorf("keyed: %s: %w", k.name, err)
			}
			r.Round, r.Position = round, pos
			add(out, k, st, r)
			progress(opt, k, r)
		}
	}
	return nil
}

// add appends r to k's result, making it if needed.
func add(out *results.Keyed, k contender, st results.KeyedSettings, r results.KeyedRound) {
	i := slices.IndexFunc(out.Results, func(x results.KeyedResult) bool { return x.Contender == k.name })
	if i < 0 {
		out.Results = append(out.Results, results.KeyedResult{Contender: k.name, Setup: k.setup(st), Evicts: k.evicts})
		i = len(out.Results) - 1
	}
	out.Results[i].Rounds = append(out.Results[i].Rounds, r)
}

// splitProgress prints a line for round r of k in the split case c.
func splitProgress(opt Options, c results.KeyedSplit, k splitContender, r results.KeyedSplitRound) {
	if opt.Progress == nil {
		return
	}
	fmt.Fprintf(opt.Progress, "poolbench: keyed %s [round %d/%d] %s: %s queries/s, p50 %s, p99 %s, %d failed (%d with 53300, %d timed out), "+
		"%s connects per acquire (%s after the warm-up), %d evictions, at most %d backends\n",
		c.Name, r.Round+1, c.Settings.Rounds, k.name, results.Rate(r.QueriesPerSec()),
		results.Nanos(float64(r.P50Ns)), results.Nanos(float64(r.P99Ns)), r.Failed, r.TooMany, r.Timeouts,
		results.PerAcquire(r.ConnectsPerAcquire()), results.PerAcquire(r.SteadyConnectsPerAcquire()), r.EvictionsTotal(), r.MaxBackends)
}

func progress(opt Options, k contender, r results.KeyedRound) {
	if opt.Progress == nil {
		return
	}
	fmt.Fprintf(opt.Progress, "poolbench: keyed [round %d/%d] %s: %s queries/s, %d failed (%d with 53300, %d timed out), %d tenants starved, %d connects, %d evictions, at most %d server connections\n",
		r.Round+1, opt.Settings.Rounds, k.name, results.Rate(r.QueriesPerSec()), r.Failed, r.TooMany, r.Timeouts, r.TenantsStarved,
		r.Connects, r.Evictions, r.MaxServerConns)
}

// runOne runs k once on a fresh client: the workers for st.DurationNs
// while a connection of its own counts the server's.
func runOne(ctx context.Context, srv *server, k contender, round int, st results.KeyedSettings) (results.KeyedRound, error) {
	c, err := k.open(ctx, srv, st)
	if err != nil {
		return results.KeyedRound{}, err
	}
	mon, err := startMonitor(ctx, srv.pg.Admin, time.Duration(st.PollNs), countQuery)
	if err != nil {
		c.close()
		return results.KeyedRound{}, fmt.Errorf("counting the server's connections: %w", err)
	}
	l := startLoad(c, srv, round, st)
	select {
	case <-time.After(time.Duration(st.DurationNs)):
	case <-ctx.Done():
	}
	samples, wall, first, other := l.stop()
	n := c.counts()
	c.close()
	most, polls, merr := mon.stop()
	if ctx.Err() != nil {
		return results.KeyedRound{}, ErrInterrupted
	}
	if merr != nil {
		return results.KeyedRound{}, fmt.Errorf("counting the server's connections: %w", merr)
	}
	r := figures(samples, srv.tenants, st.MinSamples)
	r.WallNs, r.Connects, r.Evictions = wall.Nanoseconds(), n.connects, n.evictions()
	r.MaxServerConns, r.Polls, r.FirstError, r.FirstOther = most, polls, first, other
	return r, nil
}

// load is the workers of one run.
type load struct {
	t0                 time.Time
	stopped            atomic.Bool
	wg                 sync.WaitGroup
	logs               [][]sample // one per worker, its own until wg is done
	errOnce, otherOnce sync.Once
	firstErr           string // set once, by errOnce
	firstOther         string // set once, by otherOnce: the first error not a refused connection
}

// startLoad starts st.Workers goroutines, each picking a tenant by the
// Zipf law (the same sequence for every contender of a round) and running
// its query, back to back, under st.DeadlineNs.
func startLoad(c client, srv *server, round int, st results.KeyedSettings) *load {
	l := &load{t0: time.Now(), logs: make([][]sample, st.Workers)}
	sql := querySQL(time.Duration(st.SleepNs))
	for i := range st.Workers {
		z := newZipf(uint64(round)<<32|uint64(i+1), st.ZipfS, len(srv.tenants))
		l.wg.Go(func() { l.work(i, c, z, srv.tenants, sql, time.Duration(st.DeadlineNs)) })
	}
	return l
}

func (l *load) work(i int, c client, z *zipf, tenants []string, sql string, deadline time.Duration) {
	for !l.stopped.Load() {
		t := z.pick()
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		start := time.Now()
		conn, done, err := c.acquire(ctx, t)
		acquired := time.Since(start)
		if err == nil {
			err = query(ctx, conn, sql, tenants[t])
			done(conn.IsClosed())
		}
		elapsed := time.Since(start)
		cancel()
		o := classify(err)
		l.logs[i] = append(l.logs[i], sample{tenant: int32(t), outcome: o, acquire: acquired, elapsed: elapsed})
		if err != nil {
			l.errOnce.Do(func() { l.firstErr = oneLine(err.Error()) })
		}
		if err != nil && o != tooMany {
			l.otherOnce.Do(func() { l.firstOther = oneLine(err.Error()) })
		}
	}
}

// stop ends the load: no query starts from now; it waits for those in
// flight (each bounded by its deadline) and returns every worker's
// samples, the time from the start to the last worker's return, and the
// texts of the first error and of the first that was not a refused
// connection.
func (l *load) stop() ([]sample, time.Duration, string, string) {
	l.stopped.Store(true)
	l.wg.Wait()
	wall := time.Since(l.t0)
	var all []sample
	for _, s := range l.logs {
		all = append(all, s...)
	}
	return all, wall, l.firstErr, l.firstOther
}

// querySQL is every query: the tenant's database name and its one row,
// after a sleep on the server, so that a query holds its connection for
// about that long.
func querySQL(sleep time.Duration) string {
	return fmt.Sprintf("SELECT current_database(), v FROM item, pg_sleep(%g) WHERE id = 1", sleep.Seconds())
}

// query runs sql on c and checks that it ran in db.
func query(ctx context.Context, c *pgx.Conn, sql, db string) error {
	var got, v string
	if err := c.QueryRow(ctx, sql).Scan(&got, &v); err != nil {
		return err
	}
	if got != db {
		return fmt.Errorf("%w: asked %s, ran in %s", errWrongDatabase, db, got)
	}
	return nil
}

// monitor counts connections on the server every poll, on a connection of
// its own as a superuser, which is not counted.
type monitor struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned
	// Set by the goroutine, read once done is closed.
	most, polls int
	err         error
}

// startMonitor connects with connect and runs the count query sql with
// args every poll until stop.
func startMonitor(ctx context.Context, connect func(context.Context, string) (*pgx.Conn, error), every time.Duration, sql string, args ...any) (*monitor, error) {
	c, err := connect(ctx, "poolbench-keyed-count")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &monitor{cancel: cancel, done: make(chan struct{})}
	go m.run(ctx, c, every, sql, args)
	return m, nil
}

func (m *monitor) run(ctx context.Context, c *pgx.Conn, every time.Duration, sql string, args []any) {
	defer close(m.done)
	defer c.Close(context.Background())
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		var n int
		if err := c.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
			if ctx.Err() == nil {
				m.err = err
			}
			return
		}
		m.most, m.polls = max(m.most, n), m.polls+1
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// stop ends the counting and returns the most connections seen, the
// number of counts and the error that ended it early, if any.
func (m *monitor) stop() (most, polls int, err error) {
	m.cancel()
	<-m.done
	return m.most, m.polls, m.err
}

// oneLine is s on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
