package faults

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/poolkit/poolkit/benches/internal/localsrv"
	"github.com/poolkit/poolkit/benches/internal/results"
)

// Faults, in the order they run.
var Faults = []string{"kill", "restart", "partition", "sigstop", "latency"}

// Settings returns the settings of a published run: 32 goroutines on pools
// of 8, a 1 s deadline per operation, 3 s of load before the fault, 5 s of
// a lasting fault, 10 s after it, 3 rounds.
func Settings() results.FaultSettings {
	return results.FaultSettings{
		Workers: 32, MaxSize: 8, DeadlineNs: int64(time.Second),
		BeforeNs: int64(3 * time.Second), HoldNs: int64(5 * time.Second), AfterNs: int64(10 * time.Second),
		GraceNs: int64(3 * time.Second), BucketNs: int64(100 * time.Millisecond), LatencyNs: int64(5 * time.Millisecond),
		Rounds: 3,
	}
}

// SmokeSettings are Settings with every span cut short and one round: a
// check that the phase runs end to end, whose figures mean nothing.
func SmokeSettings() results.FaultSettings {
	s := Settings()
	s.BeforeNs, s.HoldNs, s.AfterNs = int64(400*time.Millisecond), int64(300*time.Millisecond), int64(600*time.Millisecond)
	s.GraceNs, s.Rounds = int64(1500*time.Millisecond), 1
	return s
}

// Estimate is about how long Run takes with s, both servers found: every
// contender through every fault, each round, with the servers' set-up.
func Estimate(s results.FaultSettings) time.Duration {
	perRun := time.Duration(s.BeforeNs+s.HoldNs+s.AfterNs) + 2*time.Second // set-up, the drain, a restart
	return 10*time.Second + time.Duration(s.Rounds*len(Faults)*len(contenders))*perRun
}

// Options say what Run runs.
type Options struct {
	Settings results.FaultSettings
	// Progress, if not nil, gets a line per run.
	Progress io.Writer
}

// ErrInterrupted is returned, with what was measured so far, when ctx ends
// during Run.
var ErrInterrupted = errors.New("faults: interrupted")

// Run starts the servers, runs every contender through every fault, round
// after round, and stops the servers. A server that cannot be started is
// skipped, with the reason in the result.
func Run(ctx context.Context, opt Options) (*results.Faults, error) {
	out := &results.Faults{Settings: opt.Settings}
	servers := startServers(ctx, out)
	defer func() {
		for _, s := range servers {
			_ = s.Close()
		}
	}()
	for round := range opt.Settings.Rounds {
		for _, fault := range Faults {
			for _, k := range contenders {
				srv := servers[k.server]
				if srv == nil {
					continue
				}
				if ctx.Err() != nil {
					return out, ErrInterrupted
				}
				r, err := runOne(ctx, srv, k, fault, opt.Settings)
				if err != nil {
					return out, fmt.Errorf("faults: %s through %s on %s: %w", k.name, fault, k.server, err)
				}
				add(out, k, fault, r)
				progress(opt, round, fault, k, r)
			}
		}
	}
	return out, nil
}

// startServers starts PostgreSQL and Redis, recording each in out, or the
// reason it was skipped.
func startServers(ctx context.Context, out *results.Faults) map[string]server {
	servers := map[string]server{}
	starts := []struct {
		name  string
		start func(context.Context) (server, error)
	}{
		{"postgres", func(ctx context.Context) (server, error) { return startPostgres(ctx) }},
		{"redis", func(ctx context.Context) (server, error) { return startRedis(ctx) }},
	}
	for _, s := range starts {
		srv, err := s.start(ctx)
		if err != nil {
			out.Skipped = append(out.Skipped, results.Skip{Server: s.name, Reason: err.Error()})
			continue
		}
		servers[s.name] = srv
		out.Servers = append(out.Servers, results.FaultServer{Server: s.name, Describe: srv.Describe()})
	}
	return servers
}

// add appends r to the result of k through fault, making it if needed.
func add(out *results.Faults, k contender, fault string, r results.FaultRound) {
	i := slices.IndexFunc(out.Results, func(x results.FaultResult) bool {
		return x.Fault == fault && x.Contender == k.name && x.Server == k.server
	})
	if i < 0 {
		out.Results = append(out.Results, results.FaultResult{Fault: fault, Server: k.server, Contender: k.name, Setup: k.setup})
		i = len(out.Results) - 1
	}
	out.Results[i].Rounds = append(out.Results[i].Rounds, r)
}

func progress(opt Options, round int, fault string, k contender, r results.FaultRound) {
	if opt.Progress == nil {
		return
	}
	rec := "never"
	if r.RecoveryNs >= 0 {
		rec = time.Duration(r.RecoveryNs).Round(time.Millisecond).String()
	}
	fmt.Fprintf(opt.Progress, "poolbench: faults [round %d/%d] %s, %s on %s: %d ops, %d failed (%d after the fault), back to 90%% in %s, %d stuck\n",
		round+1, opt.Settings.Rounds, fault, k.name, k.server, r.Ops, r.Failed, r.FailedAfter, rec, r.Stuck)
}

// path is the way from the clients to one server: the hold proxy in front
// of a toxiproxy proxy in front of the server.
type path struct {
	hold *holdProxy
	tox  *latencyProxy
	once sync.Once
}

func openPath(srv server) (*path, error) {
	tox, err := listenLatency(srv.Addr())
	if err != nil {
		return nil, err
	}
	hold, err := listenHold(tox.Addr())
	if err != nil {
		tox.Close()
		return nil, err
	}
	return &path{hold: hold, tox: tox}, nil
}

// close closes both proxies and every connection through them; it may be
// called again.
func (p *path) close() {
	p.once.Do(func() {
		p.hold.Close()
		p.tox.Close()
	})
}

// runOne runs k through fault once, on a fresh path and a fresh pool.
func runOne(ctx context.Context, srv server, k contender, fault string, s results.FaultSettings) (results.FaultRound, error) {
	if err := settle(ctx, srv); err != nil {
		return results.FaultRound{}, err
	}
	p, err := openPath(srv)
	if err != nil {
		return results.FaultRound{}, err
	}
	defer p.close()
	c, err := k.open(p.hold.Addr(), s.MaxSize, time.Duration(s.DeadlineNs))
	if err != nil {
		return results.FaultRound{}, err
	}
	l := startLoad(c, s)
	start, end, ferr := inject(ctx, srv, p, fault, l.t0, s)
	time.Sleep(time.Until(l.t0.Add(end + time.Duration(s.AfterNs))))
	stuck := l.stop(time.Duration(s.GraceNs))
	loadEnd := time.Since(l.t0)
	c.close()
	p.close() // ends what is stuck on a connection
	// A contender that deadlocks (no close reaches what its workers wait
	// on) leaves them for good: the round goes on without their records,
	// and counts them stuck.
	if lost := l.wait(workerExitGrace); lost > stuck {
		stuck = lost
	}
	if ferr != nil {
		return results.FaultRound{}, ferr
	}
	t := timeline{records: l.records(), faultStart: start, faultEnd: end, loadEnd: loadEnd, bucket: time.Duration(s.BucketNs)}
	r := t.figures()
	r.MaxConns, r.Stuck, r.FirstError = p.hold.MostConns(), stuck, l.firstError()
	return r, nil
}

// workerExitGrace is how long a round waits for its workers to return once
// the contender and the path are closed.
const workerExitGrace = 10 * time.Second

// settle waits, at most 30 s, until srv answers and the previous run's
// connections are gone.
func settle(ctx context.Context, srv server) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := localsrv.WaitFor(ctx, srv.Healthy); err != nil {
		return fmt.Errorf("%s not ready: %w", srv.Name(), err)
	}
	return nil
}

// inject waits until the fault's moment, injects it and returns when it
// began and ended, from t0.
func inject(ctx context.Context, srv server, p *path, fault string, t0 time.Time, s results.FaultSettings) (start, end time.Duration, err error) {
	time.Sleep(time.Until(t0.Add(time.Duration(s.BeforeNs))))
	start = time.Since(t0)
	hold := time.Duration(s.HoldNs)
	switch fault {
	case "kill":
		_, err = srv.KillClients(ctx)
	case "restart":
		if err = srv.Stop(ctx); err == nil {
			err = srv.Start(ctx)
		}
	case "partition":
		p.hold.Partition()
		time.Sleep(hold)
		p.hold.Heal()
	case "sigstop":
		err = freeze(srv, hold)
	case "latency":
		if err = p.tox.Add(time.Duration(s.LatencyNs)); err == nil {
			time.Sleep(hold)
			err = p.tox.Remove()
		}
	default:
		err = fmt.Errorf("unknown fault %q", fault)
	}
	return start, time.Since(t0), err
}

// freeze stops every process of srv for hold, then lets them go on.
func freeze(srv server, hold time.Duration) error {
	pids, err := srv.Pids()
	if err != nil {
		return err
	}
	err = localsrv.SignalAll(pids, syscall.SIGSTOP)
	time.Sleep(hold)
	return errors.Join(err, localsrv.SignalAll(pids, syscall.SIGCONT))
}

// load is the workers of one run.
type load struct {
	t0       time.Time
	stopped  atomic.Bool
	inFlight atomic.Int64
	wg       sync.WaitGroup
	done     chan struct{} // closed when every worker has returned
	logs     [][]record    // one per worker, its own until it returns
	returned []atomic.Bool // set by each worker as it returns: its log is the round's then
	errMu    sync.Mutex
	firstErr string
}

// startLoad starts s.Workers goroutines running c.op in a loop, each under
// the deadline.
func startLoad(c client, s results.FaultSettings) *load {
	l := &load{t0: time.Now(), logs: make([][]record, s.Workers), returned: make([]atomic.Bool, s.Workers), done: make(chan struct{})}
	deadline := time.Duration(s.DeadlineNs)
	for i := range s.Workers {
		l.wg.Go(func() { l.work(i, c, deadline) })
	}
	go func() { l.wg.Wait(); close(l.done) }()
	return l
}

func (l *load) work(i int, c client, deadline time.Duration) {
	defer l.returned[i].Store(true)
	for !l.stopped.Load() {
		start := time.Since(l.t0)
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		l.inFlight.Add(1)
		err := c.op(ctx)
		l.inFlight.Add(-1)
		cancel()
		l.logs[i] = append(l.logs[i], record{start: start, dur: time.Since(l.t0) - start, failed: err != nil})
		if err != nil {
			l.errMu.Lock()
			if l.firstErr == "" {
				l.firstErr = oneLine(err.Error())
			}
			l.errMu.Unlock()
		}
	}
}

// stop ends the load: no operation starts from now; it waits up to grace
// for those in flight and returns how many are still running.
func (l *load) stop(grace time.Duration) int {
	l.stopped.Store(true)
	select {
	case <-l.done:
		return 0
	case <-time.After(grace):
		return int(l.inFlight.Load())
	}
}

// wait waits up to grace for every worker, once what they were stuck on is
// closed, and returns how many have not returned.
func (l *load) wait(grace time.Duration) int {
	select {
	case <-l.done:
		return 0
	case <-time.After(grace):
	}
	n := 0
	for i := range l.returned {
		if !l.returned[i].Load() {
			n++
		}
	}
	return n
}

// records is the records of every worker that has returned.
func (l *load) records() []record {
	var out []record
	for i, r := range l.logs {
		if l.returned[i].Load() {
			out = append(out, r...)
		}
	}
	return out
}

func (l *load) firstError() string {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.firstErr
}

// oneLine is s on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
