package keyed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/poolkit/poolkit/benches/internal/cacheline"
	"github.com/poolkit/poolkit/benches/internal/results"
	"github.com/poolkit/poolkit/pool"
)

// The split cases, by name.
const (
	CaseSteady   = "steady"   // the same hottest tenants throughout
	CaseShifting = "shifting" // the tenants' ranks dealt again every SplitSettings().ShiftNs
)

// splitTenants is the tenants of the split cases, and the connections of
// the static split: one each.
const splitTenants = 20

// SplitSettings returns the settings of the published split cases: 20
// tenants picked by a Zipf law of exponent 1.2, 48 goroutines, one
// operation in 10 a transaction, 12 s per contender and round of which
// the first 2 s are the warm-up, 3 rounds, and in the shifting case the
// tenants' ranks dealt again every 3 s: about two minutes per case.
func SplitSettings() results.KeyedSplitSettings {
	return results.KeyedSplitSettings{
		Tenants: splitTenants, Workers: 48, ZipfS: 1.2, TxEvery: 10, ShiftNs: int64(3 * time.Second),
		DurationNs: int64(12 * time.Second), WarmupNs: int64(2 * time.Second), DeadlineNs: int64(5 * time.Second),
		PollNs: int64(5 * time.Millisecond), Rounds: 3,
	}
}

// SmokeSplitSettings are SplitSettings cut to a check that the cases run
// end to end, whose figures mean little: 1 s per contender, a warm-up of
// 300 ms, a shift every 300 ms, one round.
func SmokeSplitSettings() results.KeyedSplitSettings {
	s := SplitSettings()
	s.DurationNs, s.WarmupNs, s.ShiftNs, s.Rounds = int64(time.Second), int64(300*time.Millisecond), int64(300*time.Millisecond), 1
	return s
}

// caseSettings is st for the split case called name: the steady case
// never shifts.
func caseSettings(name string, st results.KeyedSplitSettings) results.KeyedSplitSettings {
	if name == CaseSteady {
		st.ShiftNs = 0
	}
	return st
}

// splitContender is one way to share the split cases' connections.
type splitContender struct {
	name, key string
	evicts    bool
	setup     string
	open      func(ctx context.Context, t *target, app string) (client, error)
}

// splitContenders are the split cases', in the order of the first round:
// poolkit's keyed pool with as many connections as the static split, the
// static split itself (the baseline), and the keyed pool with fewer
// connections than tenants.
var splitContenders = []splitContender{
	keyedSplit(splitTenants, "keyed20"),
	staticSplit(),
	keyedSplit(12, "keyed12"),
}

// splitPerKey is the keyed contenders' MaxSizePerKey.
const splitPerKey = 4

// splitBaseline is the name of the static split, which the others are
// compared with.
var splitBaseline = splitContenders[1].name

func keyedSplit(maxSize int, key string) splitContender {
	return splitContender{
		name: fmt.Sprintf("poolkit keyed, MaxSize %d", maxSize), key: key, evicts: true,
		setup: fmt.Sprintf("pgxmanager.OpenKeyed with pool.KeyedConfig{MaxSize: %d, MaxSizePerKey: %d}, pgxmanager's defaults "+
			"otherwise; a key is a tenant's database", maxSize, splitPerKey),
		open: func(_ context.Context, t *target, app string) (client, error) {
			configs := map[string]*pgx.ConnConfig{}
			for i, db := range t.dbs {
				cfg, err := t.config(i, app)
				if err != nil {
					return client{}, err
				}
				configs[db] = cfg
			}
			return openKeyedPool(t.dbs, configs, pool.KeyedConfig{MaxSize: maxSize, MaxSizePerKey: splitPerKey, PerKey: pool.Config{Name: "tenants"}})
		},
	}
}

func staticSplit() splitContender {
	return splitContender{
		name: fmt.Sprintf("static split, %d pgxpools of MaxConns 1", splitTenants), key: "static",
		setup: "a pgxpool per tenant database, MaxConns 1, pgxpool's defaults otherwise: the keyed pool's connections, " +
			"split statically, one per tenant",
		open: func(ctx context.Context, t *target, app string) (client, error) {
			cfgs := make([]*pgxpool.Config, len(t.dbs))
			for i := range cfgs {
				cfg, err := t.poolConfig(i, app)
				if err != nil {
					return client{}, err
				}
				cfg.MaxConns = 1
				cfgs[i] = cfg
			}
			return openPgxpools(ctx, cfgs)
		},
	}
}

// splitRunner runs a split case on a target, round by round.
type splitRunner struct {
	t        *target
	out      results.KeyedSplit
	progress func(k splitContender, r results.KeyedSplitRound)
}

func newSplitRunner(t *target, name string, st results.KeyedSplitSettings, connectNs int64) *splitRunner {
	st = caseSettings(name, st)
	return &splitRunner{t: t, out: results.KeyedSplit{
		Name: name, Settings: st, Server: t.describe, ConnectNs: connectNs, Baseline: splitBaseline,
	}}
}

// round runs every contender once, in an order rotated by the round, each
// once the previous one's connections are gone from the server.
func (s *splitRunner) round(ctx context.Context, round int) error {
	for pos := range splitContenders {
		k := splitContenders[(pos+round)%len(splitContenders)]
		if err := s.t.settle(ctx); err != nil {
			if ctx.Err() != nil {
				return ErrInterrupted
			}
			return fmt.Errorf("keyed: %s: before %s: %w", s.out.Name, k.name, err)
		}
		r, err := runSplitOne(ctx, s.t, k, round, s.out.Settings)
		if errors.Is(err, ErrInterrupted) {
			return err
		}
		if err != nil {
			return fmt.Errorf("keyed: %s: %s: %w", s.out.Name, k.name, err)
		}
		r.Round, r.Position = round, pos
		i := slices.IndexFunc(s.out.Results, func(x results.KeyedSplitResult) bool { return x.Contender == k.name })
		if i < 0 {
			s.out.Results = append(s.out.Results, results.KeyedSplitResult{Contender: k.name, Key: k.key, Setup: k.setup, Evicts: k.evicts})
			i = len(s.out.Results) - 1
		}
		s.out.Results[i].Rounds = append(s.out.Results[i].Rounds, r)
		if s.progress != nil {
			s.progress(k, r)
		}
	}
	return nil
}

// runSplitOne runs k once on a fresh client: the workers for
// st.DurationNs, its counters read at the end of the warm-up and at the
// end, while a connection of its own counts k's on the server.
func runSplitOne(ctx context.Context, t *target, k splitContender, round int, st results.KeyedSplitSettings) (results.KeyedSplitRound, error) {
	app := t.apps + k.key
	c, err := k.open(ctx, t, app)
	if err != nil {
		return results.KeyedSplitRound{}, err
	}
	mon, err := startMonitor(ctx, t.admin, time.Duration(st.PollNs), appCountQuery, app)
	if err != nil {
		c.close()
		return results.KeyedSplitRound{}, fmt.Errorf("counting the server's connections: %w", err)
	}
	l := startSplitLoad(c, t.dbs, round, st)
	warmup := min(time.Duration(st.WarmupNs), time.Duration(st.DurationNs))
	var warm counts
	select {
	case <-time.After(warmup):
		warm = c.counts()
	case <-ctx.Done():
	}
	select {
	case <-time.After(time.Duration(st.DurationNs) - warmup):
	case <-ctx.Done():
	}
	r, wall := l.stop()
	end := c.counts()
	c.close()
	most, polls, merr := mon.stop()
	if ctx.Err() != nil {
		return results.KeyedSplitRound{}, ErrInterrupted
	}
	if merr != nil {
		return results.KeyedSplitRound{}, fmt.Errorf("counting the server's connections: %w", merr)
	}
	r.WallNs = wall.Nanoseconds()
	r.Acquires, r.Connects = end.acquires, end.connects
	r.SteadyAcquires, r.SteadyConnects = end.acquires-warm.acquires, end.connects-warm.connects
	r.Evictions = end.evicted
	r.MaxBackends, r.Polls = most, polls
	return r, nil
}

// deal returns the tenant of each Zipf rank, epoch by epoch: the identity
// throughout where st does not shift, else the identity then a random
// permutation per st.ShiftNs, enough of them for the run and its last
// operations' deadline; the same for every contender of a round.
func deal(round int, st results.KeyedSplitSettings) [][]int {
	ranks := [][]int{identity(st.Tenants)}
	if st.ShiftNs <= 0 {
		return ranks
	}
	epochs := min(1000, int((st.DurationNs+st.DeadlineNs)/st.ShiftNs)+1)
	r := rand.New(rand.NewPCG(uint64(round), 0x5bd1e995))
	for len(ranks) < epochs {
		ranks = append(ranks, r.Perm(st.Tenants))
	}
	return ranks
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// splitLoad is the workers of one run of a split case.
type splitLoad struct {
	t0                 time.Time
	shift              time.Duration // 0: never
	ranks              [][]int       // read-only: the tenant of each rank, by epoch
	stopped            atomic.Bool
	wg                 sync.WaitGroup
	logs               []splitLog // one per worker, its own until wg is done
	errOnce, otherOnce sync.Once
	firstErr           string // set once, by errOnce
	firstOther         string // set once, by otherOnce: the first error not a refused connection
}

// splitLog is what one worker counted, padded so that no two workers'
// logs share a cache line.
type splitLog struct {
	ops, tx, failed, tooMany, timeouts, wrongDB int64
	elapsed                                     []float64 // ns, of each successful operation
	_                                           cacheline.Pad
}

// startSplitLoad starts st.Workers goroutines, each picking a tenant by
// the Zipf law through the round's deal and running an operation (one in
// st.TxEvery a transaction), back to back, under st.DeadlineNs; every
// contender of a round gets the same sequences.
func startSplitLoad(c client, dbs []string, round int, st results.KeyedSplitSettings) *splitLoad {
	l := &splitLoad{t0: time.Now(), shift: time.Duration(st.ShiftNs), ranks: deal(round, st), logs: make([]splitLog, st.Workers)}
	for i := range st.Workers {
		z := newZipf(uint64(round)<<32|uint64(i+1), st.ZipfS, len(dbs))
		l.wg.Go(func() { l.work(&l.logs[i], c, z, dbs, st.TxEvery, time.Duration(st.DeadlineNs)) })
	}
	return l
}

// tenant is the tenant of rank k now.
func (l *splitLoad) tenant(k int) int {
	if l.shift <= 0 {
		return l.ranks[0][k]
	}
	return l.ranks[int(time.Since(l.t0)/l.shift)%len(l.ranks)][k]
}

func (l *splitLoad) work(log *splitLog, c client, z *zipf, dbs []string, txEvery int, deadline time.Duration) {
	for !l.stopped.Load() {
		t := l.tenant(z.pick())
		tx := z.oneIn(txEvery)
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		start := time.Now()
		conn, done, err := c.acquire(ctx, t)
		if err == nil {
			err = operation(ctx, conn, dbs[t], tx)
			done(conn.IsClosed())
		}
		elapsed := time.Since(start)
		cancel()
		log.ops++
		if tx {
			log.tx++
		}
		o := classify(err)
		switch o {
		case ok:
			log.elapsed = append(log.elapsed, float64(elapsed))
			continue
		case tooMany:
			log.tooMany++
		case timedOut:
			log.timeouts++
		case wrongDB:
			log.wrongDB++
		}
		log.failed++
		l.errOnce.Do(func() { l.firstErr = oneLine(err.Error()) })
		if o != tooMany {
			l.otherOnce.Do(func() { l.firstOther = oneLine(err.Error()) })
		}
	}
}

// stop ends the load: no operation starts from now; it waits for those in
// flight (each bounded by its deadline) and returns the round's figures
// from the workers' logs, and the time from the start to the last
// worker's return.
func (l *splitLoad) stop() (results.KeyedSplitRound, time.Duration) {
	l.stopped.Store(true)
	l.wg.Wait()
	wall := time.Since(l.t0)
	r := splitFigures(l.logs)
	r.FirstError, r.FirstOther = l.firstErr, l.firstOther
	return r, wall
}

// splitFigures sums the workers' logs: the operations and their
// outcomes, and the median and p99 of the successful ones' times.
func splitFigures(logs []splitLog) results.KeyedSplitRound {
	var r results.KeyedSplitRound
	var all []float64
	for _, g := range logs {
		r.Ops += g.ops
		r.Transactions += g.tx
		r.Failed += g.failed
		r.TooMany += g.tooMany
		r.Timeouts += g.timeouts
		r.WrongDatabase += g.wrongDB
		all = append(all, g.elapsed...)
	}
	if len(all) > 0 {
		slices.Sort(all)
		r.P50Ns, r.P99Ns = int64(sortedQuantile(all, 0.5)), int64(sortedQuantile(all, 0.99))
	}
	return r
}

// sortedQuantile is the q-quantile of the sorted, non-empty xs (the
// smallest x with at least a q share of xs at or below it).
func sortedQuantile(xs []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// operation is one operation of a split case on c, for database db: a
// query of the database's name, or, with tx, a transaction of that query
// and a second one.
func operation(ctx context.Context, c *pgx.Conn, db string, tx bool) error {
	if !tx {
		return checkDatabase(ctx, c, db)
	}
	t, err := c.Begin(ctx)
	if err != nil {
		return err
	}
	var one int
	err = checkDatabase(ctx, t, db)
	if err == nil {
		err = t.QueryRow(ctx, "SELECT 1").Scan(&one)
	}
	if err != nil {
		_ = t.Rollback(ctx)
		return err
	}
	return t.Commit(ctx)
}

// querier is what checkDatabase needs of a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// checkDatabase asks q the name of its database and checks that it is
// db.
func checkDatabase(ctx context.Context, q querier, db string) error {
	var got string
	if err := q.QueryRow(ctx, "SELECT current_database()").Scan(&got); err != nil {
		return err
	}
	if got != db {
		return fmt.Errorf("%w: asked %s, ran in %s", errWrongDatabase, db, got)
	}
	return nil
}

// SplitBench runs a split case on a server named by a connection string,
// a round at a time, for Go benchmarks (BenchmarkKeyedTenants). Its
// methods are called from one goroutine.
type SplitBench struct {
	t     *target
	s     *splitRunner
	round int
}

// OpenSplit makes the tenant databases of the split case called name
// (CaseSteady or CaseShifting) on dsn's server, whose user must be a
// superuser, and times a connect there; progress, if not nil, gets a line
// per contender and round. Close drops the databases.
func OpenSplit(ctx context.Context, dsn, name string, st results.KeyedSplitSettings, progress io.Writer) (*SplitBench, error) {
	if name != CaseSteady && name != CaseShifting {
		return nil, fmt.Errorf("keyed: no split case %q", name)
	}
	t, err := givenTarget(ctx, dsn, st.Tenants)
	if err != nil {
		return nil, err
	}
	connectNs, err := t.connectCost(ctx)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("keyed: timing a connect: %w", err), t.drop())
	}
	s := newSplitRunner(t, name, st, connectNs)
	opt := Options{Progress: progress}
	s.progress = func(k splitContender, r results.KeyedSplitRound) { splitProgress(opt, s.out, k, r) }
	return &SplitBench{t: t, s: s}, nil
}

// Round runs every contender once more.
func (b *SplitBench) Round(ctx context.Context) error {
	b.s.out.Settings.Rounds = b.round + 1
	err := b.s.round(ctx, b.round)
	b.round++
	return err
}

// Result is the case as measured so far: its settings' Rounds is the
// rounds run.
func (b *SplitBench) Result() results.KeyedSplit { return b.s.out }

// Close drops the tenant databases.
func (b *SplitBench) Close() error { return b.t.drop() }
