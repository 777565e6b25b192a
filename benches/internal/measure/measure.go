// Package measure runs workload cases the way poolbench reports them: every
// contender of a case in the same process, in alternating rounds (round r
// runs each contender once, the order rotated by r), each measurement on a
// fresh instance after a warm-up, with the allocations counted from
// runtime.MemStats and the latency of every goroutine recorded in batches.
package measure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/poolkit/poolkit/benches/internal/results"
	"github.com/poolkit/poolkit/benches/internal/sockets"
	"github.com/poolkit/poolkit/benches/internal/workload"
)

// Options say how long to measure.
type Options struct {
	// Rounds per case, ≥ 1.
	Rounds int
	// Ops is the number of ops per contender per round, split among its
	// goroutines. 0: run for Duration instead. A case with OpsPerWorker
	// runs that many per goroutine whatever Ops says.
	Ops int64
	// Duration is how long each contender runs per round when Ops is 0.
	Duration time.Duration
	// Progress, if not nil, receives a line per case and round once the run
	// has lasted ProgressAfter.
	Progress      io.Writer
	ProgressAfter time.Duration
}

// BatchTarget is how long one timed batch of ops lasts at least: clock
// readings (tens of ns) stay a few percent of it.
const BatchTarget = 2 * time.Microsecond

// maxBatch bounds the ops of one batch.
const maxBatch = 1 << 16

// ErrInterrupted is returned, with the results measured so far, when ctx is
// cancelled during a run.
var ErrInterrupted = errors.New("measure: interrupted")

// Run measures every case and returns its results. If ctx is cancelled it
// stops at once, drops the measurement in progress and returns the rounds
// completed so far (cases without any are left out) with ErrInterrupted. Any
// other error (a contender that cannot be set up) ends the run.
func Run(ctx context.Context, cases []workload.Case, opt Options) ([]results.Case, error) {
	if opt.Rounds < 1 {
		return nil, fmt.Errorf("measure: Rounds must be >= 1, got %d", opt.Rounds)
	}
	if opt.Ops <= 0 && opt.Duration <= 0 {
		return nil, errors.New("measure: one of Ops and Duration must be > 0")
	}
	began := time.Now()
	var out []results.Case
	for ci, c := range cases {
		rc := results.Case{
			Name: c.Name(), Group: c.Top + "/" + c.Group, Params: c.Params, Workers: c.Workers,
			Unit: c.Unit, Baseline: c.Baseline, Latency: c.Latency, Server: c.Server, Setup: c.Setup,
			TimeWait: c.TimeWaitPort > 0 && sockets.Available(), Memory: c.Memory, Fairness: c.Fairness,
		}
		for _, e := range c.Entries {
			rc.Contenders = append(rc.Contenders, results.Contender{Name: e.Name, Key: e.Key})
		}
		keep := func() {
			for _, k := range rc.Contenders {
				if len(k.Rounds) > 0 {
					out = append(out, rc)
					return
				}
			}
		}
		for r := range opt.Rounds {
			n := len(c.Entries)
			for pos := range n {
				j := (pos + r) % n
				round, err := measureOne(ctx, c, c.Entries[j], opt)
				if err != nil {
					keep()
					return out, err
				}
				round.Round, round.Position = r, pos
				rc.Dials = rc.Dials || round.Dials > 0
				rc.Contenders[j].Rounds = append(rc.Contenders[j].Rounds, round)
			}
			if opt.Progress != nil && time.Since(began) >= opt.ProgressAfter {
				fmt.Fprintf(opt.Progress, "poolbench: [case %d/%d, round %d/%d] %s (%s elapsed)\n",
					ci+1, len(cases), r+1, opt.Rounds, c.Name(), time.Since(began).Round(time.Second))
			}
		}
		keep()
	}
	return out, nil
}

// settleFor bounds the wait, after a round, for the sockets its contender
// closed to reach TIME_WAIT.
const settleFor = 500 * time.Millisecond

// measureOne sets up a fresh instance of e, calibrates the batch size, warms
// it up and measures one round. For a case with a TimeWaitPort it counts the
// port's TIME_WAIT sockets before the set-up and after the instance closed.
func measureOne(ctx context.Context, c workload.Case, e workload.Entry, opt Options) (results.Round, error) {
	if ctx.Err() != nil {
		return results.Round{}, ErrInterrupted
	}
	var tw *results.TimeWait
	if c.TimeWaitPort > 0 {
		if before, err := sockets.Count(c.TimeWaitPort); err == nil {
			tw = &results.TimeWait{Before: before.TimeWait}
		}
	}
	round, err := measureInstance(ctx, c, e, opt)
	if err != nil || tw == nil {
		return round, err
	}
	after, err := sockets.Settle(c.TimeWaitPort, settleFor)
	if err == nil {
		tw.After = after.TimeWait
		round.TimeWait = tw
	}
	return round, nil
}

// measureInstance is measureOne from the set-up to the close of the
// instance: set up, calibrate, warm up, measure, and account for memory.
func measureInstance(ctx context.Context, c workload.Case, e workload.Entry, opt Options) (results.Round, error) {
	runtime.GC() // each contender starts from a collected heap
	live := heapAlloc()
	in, err := e.Setup()
	if err != nil {
		return results.Round{}, fmt.Errorf("%s %s: %w", c.Name(), e.Name, err)
	}
	defer in.Close()
	ops := make([]workload.Op, c.Workers)
	for i := range ops {
		ops[i] = in.Worker(i)
	}
	batch := 1
	if !c.TimeEachOp {
		batch = calibrate(ops[0])
	}
	dur := max(opt.Duration, c.MinDuration)
	warm := max(dur/10, time.Millisecond)
	if _, err := drive(ctx, ops, quotas(c, opt, len(ops), 10), warm, batch, nil); err != nil {
		return results.Round{}, err
	}
	var asked, capacity int64
	if in.Tally != nil {
		asked, capacity = in.Tally()
	}
	hs := histograms(c, len(ops))
	d, err := drive(ctx, ops, quotas(c, opt, len(ops), 1), dur, batch, hs)
	if err != nil {
		return results.Round{}, err
	}
	round := roundOf(c, d, batch, hs)
	if in.Dials != nil {
		round.Dials = in.Dials()
	}
	if c.Memory && in.Tally != nil {
		a, k := in.Tally()
		round.Asked, round.Capacity = a-asked, k-capacity
		round.Retained = retained(live)
	}
	return round, nil
}

// heapAlloc is the live heap now, as runtime.MemStats counts it.
func heapAlloc() uint64 {
	var heap runtime.MemStats
	runtime.ReadMemStats(&heap)
	return heap.HeapAlloc
}

// retained is what the contender keeps: the ops are done and hold nothing
// (the sink that makes buffers escape is cleared), so what a collection
// leaves live beyond live, the heap before the set-up, is the contender's.
func retained(live uint64) int64 {
	workload.ClearSink()
	runtime.GC()
	return max(0, int64(heapAlloc())-int64(live))
}

// quotas are the ops each of n goroutines runs, divided by div (10 for the
// warm-up): the case's OpsPerWorker, or opt.Ops shared among them; nil
// where the round is timed instead.
func quotas(c workload.Case, opt Options, n int, div int64) []int64 {
	if c.OpsPerWorker == 0 && opt.Ops <= 0 {
		return nil
	}
	q := make([]int64, n)
	for i := range q {
		if c.OpsPerWorker > 0 {
			q[i] = max(1, int64(c.OpsPerWorker)/div)
			continue
		}
		per := opt.Ops / int64(n)
		if int64(i) < opt.Ops%int64(n) {
			per++
		}
		q[i] = max(1, per/div)
	}
	return q
}

// histograms are one latency histogram per goroutine where the case
// records latency, else nil.
func histograms(c workload.Case, n int) []*hist {
	if !c.Latency {
		return nil
	}
	hs := make([]*hist, n)
	for i := range hs {
		hs[i] = new(hist)
	}
	return hs
}

// roundOf is the round that d measured.
func roundOf(c workload.Case, d driven, batch int, hs []*hist) results.Round {
	round := results.Round{
		Ops: d.ops, WallNs: d.wall.Nanoseconds(), Mallocs: d.mallocs, Bytes: d.bytes,
		Errors: d.errs, Batch: batch, MinWorkerOps: d.minOps, MaxWorkerOps: d.maxOps,
	}
	if c.Fairness {
		round.Jain = d.jain
	}
	if hs != nil {
		round.Latency = worst(hs)
	}
	return round
}

// calibrate runs op alone for about a millisecond (at least once) and
// returns how many ops a batch of BatchTarget holds.
func calibrate(op workload.Op) int {
	t0 := time.Now()
	n := 0
	for {
		_ = op()
		n++
		if el := time.Since(t0); el >= time.Millisecond || n >= 1<<20 {
			per := max(el.Nanoseconds()/int64(n), 1)
			return int(min(max(BatchTarget.Nanoseconds()/per, 1), maxBatch))
		}
	}
}

type driven struct {
	wall           time.Duration
	ops, errs      int64
	minOps, maxOps int64
	// jain is Jain's fairness index of the goroutines' op counts.
	jain           float64
	mallocs, bytes int64
}

// drive runs ops[i] on goroutine i, all released at once, in batches of
// batch ops, until each has run quota[i] ops or, with no quota, until d has
// passed. With hs, each batch's mean per-op time goes to hs[i]. It returns
// ErrInterrupted, and nothing else, if ctx ends first.
func drive(ctx context.Context, ops []workload.Op, quota []int64, d time.Duration, batch int, hs []*hist) (driven, error) {
	var (
		stop  atomic.Bool
		start = make(chan struct{})
		wg    sync.WaitGroup
		done  = make([]int64, len(ops))
		errs  atomic.Int64
	)
	for i, op := range ops {
		w := worker{op: op, batch: int64(batch), stop: &stop}
		if hs != nil {
			w.h = hs[i]
		}
		if quota != nil {
			w.quota = quota[i]
		}
		wg.Go(func() {
			<-start
			n, bad := w.run()
			done[i] = n
			errs.Add(bad)
		})
	}
	// Everything that allocates happens before the first MemStats reading.
	unhook := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer unhook()
	timer := time.AfterFunc(time.Hour, func() { stop.Store(true) })
	timer.Stop()
	defer timer.Stop()

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	t0 := time.Now()
	if quota == nil {
		timer.Reset(d)
	}
	close(start)
	wg.Wait()
	wall := time.Since(t0)
	runtime.ReadMemStats(&after)
	if ctx.Err() != nil {
		return driven{}, ErrInterrupted
	}
	return drove(wall, done, errs.Load(), before, after), nil
}

// worker is one goroutine of drive: it runs op in batches until stop, or
// until it has run quota ops if quota is not 0, timing each batch into h
// if not nil.
type worker struct {
	op    workload.Op
	batch int64
	quota int64
	h     *hist
	stop  *atomic.Bool
}

// run runs the worker's ops and returns how many ran and how many failed.
func (w worker) run() (n, bad int64) {
	t := time.Now()
	for !w.stop.Load() {
		b := w.batch
		if w.quota > 0 {
			if n >= w.quota {
				break
			}
			b = min(b, w.quota-n)
		}
		for range b {
			if w.op() != nil {
				bad++
			}
		}
		if w.h != nil {
			// One clock reading per batch: the end of this one is the
			// start of the next.
			now := time.Now()
			w.h.record(uint64(now.Sub(t).Nanoseconds()) / uint64(b))
			t = now
		}
		n += b
	}
	return n, bad
}

// drove sums up a drive: the wall time, every goroutine's ops, the
// failures and the allocations between the two MemStats readings.
func drove(wall time.Duration, done []int64, errs int64, before, after runtime.MemStats) driven {
	r := driven{
		wall: wall, errs: errs, minOps: done[0], maxOps: done[0],
		mallocs: int64(after.Mallocs - before.Mallocs),
		bytes:   int64(after.TotalAlloc - before.TotalAlloc),
	}
	for _, n := range done {
		r.ops += n
		r.minOps, r.maxOps = min(r.minOps, n), max(r.maxOps, n)
	}
	r.jain = results.Jain(done)
	return r
}

// worst returns the distribution of the goroutine with the highest p99
// (ties: the highest maximum).
func worst(hs []*hist) *results.Latency {
	var best *results.Latency
	for i, h := range hs {
		if h.n == 0 {
			continue
		}
		l := results.Latency{Worker: i, P50: h.quantile(0.5), P99: h.quantile(0.99), P999: h.quantile(0.999), Max: h.quantile(1)}
		if best == nil || l.P99 > best.P99 || (l.P99 == best.P99 && l.Max > best.Max) {
			best = &l
		}
	}
	return best
}

// perMeasurement is about what a measurement costs beyond its measured
// time: the collection, the set-up, the calibration and the close.
const perMeasurement = 5 * time.Millisecond

// Estimate is about how long Run takes on cases with opt: every contender
// of every case, each round, for its measured time, its warm-up (a tenth),
// the calibration and the collection, and for the cases that count
// TIME_WAIT sockets the wait for them to settle. Cases that run a fixed
// number of ops count as their Duration.
func Estimate(cases []workload.Case, opt Options) time.Duration {
	var total time.Duration
	for _, c := range cases {
		d := max(opt.Duration, c.MinDuration)
		one := d + max(d/10, time.Millisecond) + time.Millisecond + perMeasurement
		if c.TimeWaitPort > 0 {
			one += settleFor
		}
		total += time.Duration(opt.Rounds*len(c.Entries)) * one
	}
	return total
}
