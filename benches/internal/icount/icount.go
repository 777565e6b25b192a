// Package icount counts what one operation of a contender costs in
// instructions and heap allocations, deterministically, where wall time on
// a shared machine is not: each contender runs in a process of its own
// under valgrind's callgrind, alone on one P with the collector and
// asynchronous preemption off (results.IcountEnv), twice, for N1 and for N2
// operations after the same warm-up. The difference of the two processes'
// total instructions divided by N2 - N1 is the cost of one operation: the
// start of the process, the set-up and the warm-up cancel out. The
// allocations are the growth of runtime.MemStats.Mallocs over the counted
// loop, exact with the collector off.
//
// The totals are those of the whole process, the runtime's own threads
// (sysmon) included, which leaves a jitter of a few tenths of an instruction
// per op. Counting only inside the loop (--toggle-collect) would be tighter
// but is wrong for Go: when the scheduler preempts the goroutine it switches
// to the g0 stack, callgrind takes the jump for a return from the loop, and
// the rest goes uncounted.
//
// The child process is poolbench itself (see RunChild), so a count needs no
// build step of its own.
package icount

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/poolkit/poolkit/benches/internal/contenders"
	"github.com/poolkit/poolkit/benches/internal/results"
	"github.com/poolkit/poolkit/benches/internal/workload"
	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/shard"
)

// Op is one operation of one contender, as counted.
type Op struct {
	results.IcountOp
	// Guard says that CI checks the op against the committed baseline.
	Guard bool
	// setup makes a fresh instance and returns its operation and its close;
	// the counted loop calls the operation through a func value.
	setup func() (step func(), closeFn func(), err error)
	// loop, instead of setup, makes a fresh instance and returns a loop
	// that runs the operation n times, calling it directly.
	loop func() (run func(n int), closeFn func(), err error)
}

// Pool settings of the counted object pools: a pool big enough never to
// wait, one goroutine, and a context that can be cancelled, as a caller's
// usually can (context.Background lets some pools skip work).
const poolMaxSize = 8

// PoolUnit and BytesUnit say what one op of the tables is.
const (
	PoolUnit  = "one Acquire + Release (MaxSize 8, a no-op manager, a cancellable context)"
	BytesUnit = "one Get + Put, the buffer untouched"
)

// BytesSizes are the buffer sizes counted.
var BytesSizes = []int{4 * workload.KiB, 64 * workload.KiB, 1 * workload.MiB}

// poolContenders are the object pools counted: poolkit with a manager that
// has no check, with one that checks every reuse (poolkit-recycle), and its
// keyed pool through one key with each (poolkit-keyed,
// poolkit-keyed-recycle);
// shard stands for the pinned per-P stack under poolkit's pool, without its
// bound and its checks.
var poolContenders = []string{"poolkit", "poolkit-recycle", "poolkit-keyed", "poolkit-keyed-recycle", "shard", "syncpool", "puddle", "chan", "mutex"}

// bytesContenders are the byte pools counted: make is left out, as it
// allocates a fresh buffer every op and the collector is off.
var bytesContenders = []string{"poolkit", "syncpool", "gobufferpool", "bytebufferpool"}

// guarded are the ops CI checks against the baseline: poolkit's hot paths.
var guarded = []string{"Pool/Impl=poolkit", "Pool/Impl=poolkit-recycle", "Pool/Impl=poolkit-keyed", "Pool/Impl=poolkit-keyed-recycle",
	"Bytes/Size=4KiB/Impl=poolkit", "Bytes/Size=64KiB/Impl=poolkit", DirectTable + "/Impl=poolkit", DirectTable + "/Impl=poolkit-pkg"}

// Ops returns every counted op: the object pools, then the byte pools size
// by size.
func Ops() []Op {
	var ops []Op
	for _, name := range poolContenders {
		ops = append(ops, poolOp(name))
	}
	ops = append(ops, observerOps()...)
	for _, n := range BytesSizes {
		for _, name := range bytesContenders {
			ops = append(ops, bytesOp(name, n))
		}
	}
	ops = append(ops, directOps()...)
	for i := range ops {
		for _, g := range guarded {
			if ops[i].Name == g {
				ops[i].Guard = true
			}
		}
	}
	return ops
}

// Guarded returns the ops CI checks.
func Guarded() []Op {
	var out []Op
	for _, o := range Ops() {
		if o.Guard {
			out = append(out, o)
		}
	}
	return out
}

// ObserverUnit says what one op of the Pool/Observer table is.
const ObserverUnit = "one Acquire + Release of poolkit's pool (MaxSize 8, a no-op manager, a cancellable context) with the option named, which sends both to their slow paths: none (the hot path), Config.Observer set to pool.NopObserver or to pool.NewSlogObserver at level Info (a quick Acquire logs nothing), or Config.LeakThreshold set (each Acquire records its caller's stack)"

// observerOps are poolkit's pool with and without the options that cost
// every Acquire: what an Observer or leak detection adds per op.
func observerOps() []Op {
	var ops []Op
	for _, v := range []struct {
		name string
		cfg  contenders.PoolConfig
	}{
		{"none", contenders.PoolConfig{}},
		{"NopObserver", contenders.PoolConfig{Observer: "nop"}},
		{"SlogObserver", contenders.PoolConfig{Observer: "slog"}},
		{"LeakThreshold", contenders.PoolConfig{LeakThreshold: time.Hour}},
	} {
		ops = append(ops, Op{
			IcountOp: results.IcountOp{Name: "Pool/Observer/Impl=" + v.name, Table: "Pool/Observer", Contender: v.name, Unit: ObserverUnit},
			setup:    poolSetup("poolkit", v.cfg),
		})
	}
	return ops
}

func poolOp(name string) Op {
	o := Op{IcountOp: results.IcountOp{
		Name: "Pool/Impl=" + name, Table: "Pool", Contender: name, Unit: PoolUnit,
	}}
	if name == "shard" {
		o.setup = func() (func(), func(), error) {
			l := shard.NewLocal[*contenders.Conn](poolMaxSize, nil)
			l.Push(new(contenders.Conn))
			return func() {
				c, ok := l.Pop()
				if !ok {
					c = new(contenders.Conn) // the goroutine moved to another P: never, at GOMAXPROCS 1
				}
				c.Uses++
				l.Push(c)
			}, func() {}, nil
		}
		return o
	}
	o.setup = poolSetup(name, contenders.PoolConfig{})
	return o
}

// poolSetup makes the pool contender name with cfg (MaxSize poolMaxSize).
func poolSetup(name string, cfg contenders.PoolConfig) func() (func(), func(), error) {
	return func() (func(), func(), error) {
		c, err := contenders.PoolByName(name)
		if err != nil {
			return nil, nil, err
		}
		cfg.MaxSize = poolMaxSize
		p, err := c.New(cfg)
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithCancel(context.Background())
		return func() {
				if err := p.Cycle(ctx); err != nil {
					panic("icount: " + name + ": " + err.Error())
				}
			}, func() {
				cancel()
				p.Close()
			}, nil
	}
}

func bytesOp(name string, n int) Op {
	table := "Bytes/Size=" + workload.SizeName(n)
	return Op{
		IcountOp: results.IcountOp{Name: table + "/Impl=" + name, Table: table, Contender: name, Unit: BytesUnit},
		setup: func() (func(), func(), error) {
			c, err := contenders.BytesByName(name)
			if err != nil {
				return nil, nil, err
			}
			p, err := c.New(contenders.BytesConfig{Sizes: []int{n}})
			if err != nil {
				return nil, nil, err
			}
			return func() { p.Put(p.Get(n)) }, p.Close, nil
		},
	}
}

// DirectTable and DirectUnit name and describe the table of byte pools
// called directly: what a caller of bytepool pays, without the adapter and
// the indirect call through which the other tables reach every contender.
const (
	DirectTable = "Bytes/Direct/Size=64KiB"
	DirectUnit  = "one Get + Put of 64 KiB, the buffer untouched, called directly from the counted loop (no adapter, no indirect call)"
)

// directSize is the buffer size of the DirectTable ops.
const directSize = 64 * workload.KiB

// directOps are the DirectTable ops: a bytepool.Pool's methods (poolkit),
// the package-level bytepool.Get and bytepool.Put on the default pool
// (poolkit-pkg), and one sync.Pool of *[]byte (syncpool).
func directOps() []Op {
	op := func(contender string, loop func() (func(int), func(), error)) Op {
		return Op{
			IcountOp: results.IcountOp{Name: DirectTable + "/Impl=" + contender, Table: DirectTable, Contender: contender, Unit: DirectUnit},
			loop:     loop,
		}
	}
	return []Op{
		op("poolkit", func() (func(int), func(), error) {
			p, err := bytepool.New(bytepool.Config{})
			if err != nil {
				return nil, nil, err
			}
			return func(n int) { poolkitLoop(p, n) }, p.Trim, nil
		}),
		op("poolkit-pkg", func() (func(int), func(), error) {
			return packageLoop, bytepool.Default().Trim, nil
		}),
		op("syncpool", func() (func(int), func(), error) {
			p := &sync.Pool{New: func() any {
				b := make([]byte, directSize)
				return &b
			}}
			return func(n int) { syncPoolLoop(p, n) }, func() {}, nil
		}),
	}
}

// poolkitLoop gets and puts a buffer n times with p's methods.
//
//go:noinline
func poolkitLoop(p *bytepool.Pool, n int) {
	for range n {
		p.Put(p.Get(directSize))
	}
}

// packageLoop gets and puts a buffer n times with bytepool.Get and Put.
//
//go:noinline
func packageLoop(n int) {
	for range n {
		bytepool.Put(bytepool.Get(directSize))
	}
}

// syncPoolLoop gets and puts a buffer n times with p.
//
//go:noinline
func syncPoolLoop(p *sync.Pool, n int) {
	for range n {
		p.Put(p.Get().(*[]byte))
	}
}

// Find returns the op called name.
func Find(name string) (Op, error) {
	for _, o := range Ops() {
		if o.Name == name {
			return o, nil
		}
	}
	return Op{}, fmt.Errorf("icount: no op %q", name)
}

// warmOps is how many ops run before the counted loop: enough for every
// pool to reach its steady state (objects made, per-P tiers grown).
const warmOps = 10_000

// RunChild is the child process's part: it sets up the op called name,
// warms it up, runs it n times inside measured, and writes the heap
// allocations of those n ops to w as a decimal number.
func RunChild(w io.Writer, name string, n int) error {
	o, err := Find(name)
	if err != nil {
		return err
	}
	run, closeFn, err := o.runner()
	if err != nil {
		return fmt.Errorf("icount: %s: %w", name, err)
	}
	defer closeFn()
	run(warmOps)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	run(n)
	runtime.ReadMemStats(&after)
	_, err = fmt.Fprintln(w, after.Mallocs-before.Mallocs)
	return err
}

// runner makes a fresh instance of o and returns what runs its operation n
// times, and its close.
func (o Op) runner() (run func(n int), closeFn func(), err error) {
	if o.loop != nil {
		return o.loop()
	}
	step, closeFn, err := o.setup()
	if err != nil {
		return nil, nil, err
	}
	return func(n int) { measured(step, n) }, closeFn, nil
}

// measured runs step n times.
//
//go:noinline
func measured(step func(), n int) {
	for range n {
		step()
	}
}

// Options say what to count and how.
type Options struct {
	// Self is the command that runs RunChild: the poolbench executable and
	// its child subcommand; the child gets "-op NAME -n N" after it.
	Self []string
	// N1 < N2 are the op counts of the two runs.
	N1, N2 int
	// Progress, if not nil, gets a line per op.
	Progress io.Writer
}

// DefaultN1 and DefaultN2 are the op counts of the two runs: a hundred
// thousand ops apart, so that what varies between two runs of a process
// (a few thousand instructions) is a few hundredths of an instruction per
// op.
const (
	DefaultN1 = 10_000
	DefaultN2 = 110_000
)

// ErrNoValgrind is returned when valgrind is not in PATH.
var ErrNoValgrind = errors.New("icount: valgrind not found in PATH (on Debian or Ubuntu: apt-get install valgrind)")

// Measure counts each op of ops under callgrind and returns the figures.
func Measure(ctx context.Context, ops []Op, opt Options) (results.Icount, error) {
	if opt.N1 < 1 || opt.N2 <= opt.N1 {
		return results.Icount{}, fmt.Errorf("icount: want 0 < N1 < N2, got %d and %d", opt.N1, opt.N2)
	}
	if _, err := exec.LookPath("valgrind"); err != nil {
		return results.Icount{}, ErrNoValgrind
	}
	out := results.Icount{Machine: results.ThisMachine(), Valgrind: valgrindVersion(ctx), N1: opt.N1, N2: opt.N2}
	out.Machine.GOMAXPROCS = 1
	dir, err := os.MkdirTemp("", "poolbench-icount-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(dir)
	for _, o := range ops {
		ir1, m1, err := count(ctx, o.Name, opt.N1, dir, opt.Self, opt.Progress)
		if err != nil {
			return out, err
		}
		ir2, m2, err := count(ctx, o.Name, opt.N2, dir, opt.Self, opt.Progress)
		if err != nil {
			return out, err
		}
		if ir2 <= ir1 {
			return out, fmt.Errorf("icount: %s: callgrind counted %d instructions for %d ops and %d for %d", o.Name, ir1, opt.N1, ir2, opt.N2)
		}
		r := o.IcountOp
		d := float64(opt.N2 - opt.N1)
		r.Instructions = float64(ir2-ir1) / d
		r.Allocs = max(0, float64(int64(m2)-int64(m1))/d)
		out.Ops = append(out.Ops, r)
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "poolbench icount: %-40s %8.1f instructions/op, %s allocs/op\n",
				o.Name, r.Instructions, results.Allocs(r.Allocs))
		}
	}
	return out, nil
}

// childEnv is results.IcountEnv with cpu.rdtscp=off added to its GODEBUG:
// the runtime then reads the time stamp counter with RDTSC, which valgrind
// decodes, instead of RDTSCP (see attempts). The counted loop never reads
// it, so the counts do not move; on a loaded machine, without it, every run
// of an op could die before it counted anything.
func childEnv() []string {
	env := strings.Fields(results.IcountEnv)
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			env[i] = "GODEBUG=" + v + ",cpu.rdtscp=off"
		}
	}
	return env
}

// attempts bounds the runs of one count. valgrind (3.19) cannot decode
// RDTSCP, which the Go runtime executes on some CPUs (runtime.cputicks) when
// a lock it takes is contended — by the scheduler's monitor thread, at
// random — and the child then dies of SIGILL. Such a run counted nothing and
// is repeated (and said so on progress); any other failure is not.
const attempts = 5

// count runs op n times in a child under callgrind and returns the
// instructions counted inside measured and the child's allocations.
func count(ctx context.Context, op string, n int, dir string, self []string, progress io.Writer) (ir, mallocs uint64, err error) {
	for i := 1; ; i++ {
		var retry bool
		ir, mallocs, retry, err = countOnce(ctx, op, n, dir, self)
		if err == nil || !retry || i == attempts {
			return ir, mallocs, err
		}
		if progress != nil {
			fmt.Fprintf(progress, "poolbench icount: %s, %d ops: valgrind could not decode RDTSCP (run %d of at most %d); running it again\n", op, n, i, attempts)
		}
	}
}

// rdtscpUndecoded reports whether a child's standard error says that
// valgrind met RDTSCP (0F 01 F9), which it cannot decode, and the child died
// of SIGILL.
func rdtscpUndecoded(stderr string) bool {
	return strings.Contains(stderr, "unhandled instruction bytes: 0xF 0x1 0xF9") && strings.Contains(stderr, "SIGILL")
}

// countOnce is one run of count; retry reports a run that valgrind cut short
// (see attempts).
func countOnce(ctx context.Context, op string, n int, dir string, self []string) (ir, mallocs uint64, retry bool, err error) {
	file := filepath.Join(dir, fmt.Sprintf("callgrind.%s.%d", strings.NewReplacer("/", "_", "=", "-").Replace(op), n))
	args := append([]string{"--tool=callgrind", "--callgrind-out-file=" + file}, self...)
	args = append(args, "-op", op, "-n", strconv.Itoa(n))
	cmd := exec.CommandContext(ctx, "valgrind", args...)
	cmd.Env = append(os.Environ(), childEnv()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, 0, ctx.Err() == nil && rdtscpUndecoded(stderr.String()),
			fmt.Errorf("icount: %s: valgrind %s: %w\n%s", op, strings.Join(args, " "), err, tail(stderr.String(), 20))
	}
	mallocs, err = strconv.ParseUint(strings.TrimSpace(stdout.String()), 10, 64)
	if err != nil {
		return 0, 0, false, fmt.Errorf("icount: %s: the child printed %q, want its allocations", op, stdout.String())
	}
	f, err := os.Open(file)
	if err != nil {
		return 0, 0, false, err
	}
	defer f.Close()
	ir, err = Totals(f)
	if err != nil {
		return 0, 0, false, fmt.Errorf("icount: %s: %w", op, err)
	}
	return ir, mallocs, false, nil
}

// Totals reads the instructions (Ir, the first event) a callgrind output
// file counted: its "summary:" line, or "totals:" if it has no summary.
func Totals(r io.Reader) (uint64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var totals string
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "summary:"); ok {
			return parseFirst(v)
		}
		if v, ok := strings.CutPrefix(line, "totals:"); ok {
			totals = v
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if totals == "" {
		return 0, errors.New("no summary: or totals: line in the callgrind output")
	}
	return parseFirst(totals)
}

func parseFirst(s string) (uint64, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, fmt.Errorf("empty callgrind totals")
	}
	return strconv.ParseUint(f[0], 10, 64)
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func valgrindVersion(ctx context.Context) string {
	out, err := exec.CommandContext(ctx, "valgrind", "--version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
