// Command poolbench compares poolkit with other pools, in one process, in
// alternating rounds: per contender the median and spread of the rounds,
// the worst goroutine's latency and a rank test against poolkit; end to end
// against real servers (-mode=e2e), through server faults (-mode=faults)
// and for many tenant databases on one small server (-mode=keyed). It
// generates docs/BENCHMARKS.md, its pages and charts and
// the README's headline from its results, and publish measures the
// published set at one clean commit.
//
// Usage:
//
//	poolbench [flags]                 measure and print the tables
//	poolbench report -in results.json write BENCHMARKS.md, its pages and charts
//	poolbench publish                 measure the published set at this commit and write them all
//	poolbench icount [-merge FILE]    count instructions per op under callgrind
//	poolbench icount -baseline FILE   fail if poolkit's hot paths cost more than the baseline
//
// With no flags it runs a representative comparison in under a minute and
// prints a text table per case. -smoke cuts every span, to check that the
// code runs. See -h for the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/poolkit/poolkit/benches/internal/e2e"
	"github.com/poolkit/poolkit/benches/internal/faults"
	"github.com/poolkit/poolkit/benches/internal/keyed"
	"github.com/poolkit/poolkit/benches/internal/measure"
	"github.com/poolkit/poolkit/benches/internal/report"
	"github.com/poolkit/poolkit/benches/internal/results"
	"github.com/poolkit/poolkit/benches/internal/sockets"
	"github.com/poolkit/poolkit/benches/internal/workload"
)

// Exit statuses.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is poolbench with its arguments and outputs; it returns the exit
// status: 0, 1 on failure, 2 for bad flags, 130 when Ctrl-C (or SIGTERM)
// stopped a run, after printing what was measured so far.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, args, stdout, stderr)
}

// modes maps each -mode to the cases it runs; workers replaces the goroutine
// sweeps when not 0.
var modes = map[string]func(workers int) []workload.Case{
	"default": defaultCases,
	"hotpath": func(int) []workload.Case {
		return slices.Concat(workload.PoolHotPath(), pick(workload.BytesHotPath(),
			"Bytes/HotPath/Size=4KiB", "Bytes/HotPath/Size=64KiB", "Bytes/HotPath/Size=1MiB"))
	},
	"parallel": func(w int) []workload.Case {
		return slices.Concat(workload.PoolParallel(w), workload.PoolTimeoutArmed(w), workload.PoolHandOff(w),
			workload.BytesContention(w))
	},
	"realistic": func(w int) []workload.Case {
		return slices.Concat(workload.BytesRealistic(w), workload.BytesSustained(w), workload.BytesFullOverwrite())
	},
	"mixed":          func(int) []workload.Case { return workload.BytesMixed() },
	"growable":       func(int) []workload.Case { return workload.BytesGrowable() },
	"burst":          func(int) []workload.Case { return workload.BytesBurst() },
	"oversubscribed": workload.PoolOversubscribed,
	"exchange":       workload.PoolExchange,
	"handoff":        workload.PoolHandOff,
	"stats": func(w int) []workload.Case {
		return slices.Concat(workload.PoolStatsOverhead(w), workload.BytesStatsOverhead(w))
	},
	"bytes": workload.BytesCases,
	"all":   func(w int) []workload.Case { return slices.Concat(workload.PoolCases(w), workload.BytesCases(w)) },
}

var modeHelp = `
  default    Pool/HotPath, Pool/Parallel at MaxSize 8, Bytes 64 KiB hot path, realistic and mixed
  hotpath    Pool/HotPath; Bytes/HotPath at 4 KiB, 64 KiB, 1 MiB (all sizes with -mode=all)
  parallel   Pool/Parallel, Pool/TimeoutArmed, Pool/HandOff, Bytes/Contention
  realistic  Bytes/Realistic, Bytes/Sustained, Bytes/FullOverwrite
  mixed      Bytes/Mixed (round robin over 7 sizes; Zipf; 16 sizes not powers of two)
  burst      Bytes/Burst (N × 64 KiB)
  growable   Bytes/Growable (a growable buffer of unknown final size, written 512 bytes at a time on
             GOMAXPROCS goroutines: 2 KiB, 32 KiB, 256 KiB, and 1 to 64 KiB with rare 8 MiB outliers)
  oversubscribed
             Pool/Oversubscribed: MaxSize 8 at 32 and 128 goroutines, with 0 and 200 ns of
             work per lease; MaxSize 64 at 2 to 128 goroutines; Jain's index and min/max
  exchange   Pool/Exchange (poolkit's ring, mutex, none)
  handoff    Pool/HandOff (every acquire waits for a release)
  stats      Pool/StatsOverhead, Bytes/StatsOverhead
  bytes      every Bytes group of the Go benchmarks
  all        every group of the Go benchmarks but E2E
  e2e        end to end: pools of real connections to the in-process echo server, Redis
             (-redis) and PostgreSQL (-postgres), steady, oversubscribed and no pool;
             a server that does not answer is skipped with a note; PostgreSQL also through a
             PgBouncer that poolbench starts, where pgbouncer is installed
  faults     clients of private PostgreSQL and Redis servers that poolbench starts, through
             every connection killed, a restart, a partition, SIGSTOP and added latency
             (about ` + faults.Estimate(faults.Settings()).Round(time.Minute).String() + `; a server whose binaries are missing is skipped)
  keyed      poolkit's keyed pool on PostgreSQL, its cases (-keyed-cases):
             crowded: 100 tenant databases on a private server of max_connections 40, a Zipf law
               picking the tenant of each query: the keyed pool (MaxSize 30 across the tenants)
               against a pgxpool per tenant of MaxConns 4 and of 1;
             steady, shifting: 20 tenant databases, 48 goroutines, a Zipf law (s=1.2) picking the
               tenant of each operation (1 in 10 a transaction): the keyed pool of MaxSize 20 and
               of 12 (MaxSizePerKey 4) against the static split, 20 pgxpools of MaxConns 1; in
               shifting the tenants' ranks are dealt again every 3s (-keyed-shift); on the private
               server, or on -keyed-postgres's
             (about ` + keyed.Estimate(keyed.PublishOptions()).Round(10*time.Second).String() + `; -duration and -rounds, if given, replace every case's 20s or 12s
             per contender and 2 or 3 rounds)`

// modeE2E, modeFaults and modeKeyed need servers, so they are not in
// modes.
const (
	modeE2E    = "e2e"
	modeFaults = "faults"
	modeKeyed  = "keyed"
)

// modeNames lists the modes in the order the usage gives them.
var modeNames = []string{"default", "hotpath", "parallel", "realistic", "mixed", "burst", "growable", "oversubscribed", "exchange", "handoff", "stats", "bytes", "all", modeE2E, modeFaults, modeKeyed}

// e2eDuration is how long each end-to-end contender runs per round unless
// -duration or -ops says otherwise: long enough for a p99.9 of a few
// thousand requests per goroutine, short enough that -mode=e2e ends within
// about three minutes on two cores.
const e2eDuration = 500 * time.Millisecond

// defaultCases is the representative comparison: the object pool's hot
// path and 4× GOMAXPROCS goroutines on a pool of 8, and 64 KiB buffers:
// untouched, realistic on one and on many goroutines, and mixed sizes.
func defaultCases(workers int) []workload.Case {
	g := 4 * workload.Procs()
	if workers > 0 {
		g = workers
	}
	return slices.Concat(
		workload.PoolHotPath(),
		pick(workload.PoolParallel(g), fmt.Sprintf("Pool/Parallel/MaxSize=8/Goroutines=%d", g)),
		pick(workload.BytesHotPath(), "Bytes/HotPath/Size=64KiB"),
		pick(workload.BytesRealistic(g), "Bytes/Realistic/Size=64KiB/Goroutines=1", fmt.Sprintf("Bytes/Realistic/Size=64KiB/Goroutines=%d", g)),
		pick(workload.BytesMixed(), "Bytes/Mixed/Sizes=RoundRobin"),
	)
}

// pick returns the cases named names.
func pick(cases []workload.Case, names ...string) []workload.Case {
	var out []workload.Case
	for _, c := range cases {
		if slices.Contains(names, c.Name()) {
			out = append(out, c)
		}
	}
	return out
}

// config is what the flags of a measuring run set.
type config struct {
	modes    []string
	workers  int
	ops      int64
	duration time.Duration
	rounds   int
	output   string
	out      string
	note     string
	// e2e: -mode includes e2e; the end-to-end cases run for e2eDur (or
	// ops), against redis and postgres ("" leaves one out).
	e2e    bool
	e2eDur time.Duration
	// faults: -mode includes faults, run with faultSettings.
	faults        bool
	faultSettings results.FaultSettings
	// keyed: -mode includes keyed, run with keyedOptions.
	keyed        bool
	keyedOptions keyed.Options
	// keyedCases, keyedDSN and keyedShift are -keyed-cases,
	// -keyed-postgres and -keyed-shift.
	keyedCases string
	keyedDSN   string
	keyedShift time.Duration
	// smoke: -smoke, every span cut to a check that the code runs.
	smoke           bool
	merge           string
	redis, postgres string
}

// parse parses the flags of a measuring run. Errors are reported, with the
// usage, on stderr.
func parse(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("poolbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := c.define(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	err := c.setModes(*mode)
	if err == nil {
		err = c.validate(fs)
	}
	if err == nil {
		err = c.setKeyedCases()
	}
	if err != nil {
		fmt.Fprintf(stderr, "poolbench: %v\n", err)
		fs.Usage()
		return c, err
	}
	c.applySpans(fs)
	return c, nil
}

// define defines the flags of a measuring run on fs, into c, and returns
// -mode's value.
func (c *config) define(fs *flag.FlagSet) *string {
	mode := fs.String("mode", "default", "what to run, comma-separated: "+strings.Join(modeNames, "|")+modeHelp)
	fs.IntVar(&c.workers, "workers", 0, "goroutines of the multi-goroutine cases, instead of their sweep (0: the sweep);\n-mode=e2e: the pools' MaxSize and the steady phase's goroutines (0: "+strconv.Itoa(e2e.DefaultMaxSize)+")")
	fs.Int64Var(&c.ops, "ops", 0, "ops per contender per round, all goroutines together (0: run for -duration)")
	fs.DurationVar(&c.duration, "duration", 100*time.Millisecond, "how long each contender runs per round, when -ops is 0 (-mode=e2e: "+e2eDuration.String()+" unless given)")
	fs.IntVar(&c.rounds, "rounds", 10, "rounds per case; each round runs every contender once (the rank test needs 5 to find\nany difference; 10 give it power)")
	fs.StringVar(&c.output, "output", "text", "output format: text|json|markdown")
	fs.StringVar(&c.out, "o", "", "write the output to `FILE` instead of stdout")
	fs.StringVar(&c.note, "note", "", "a note to keep in the results (and in the report)")
	fs.BoolVar(&c.smoke, "smoke", false, "a smoke run: "+smokeDuration.String()+" per contender and 1 round unless -duration or -rounds say otherwise,\n-mode=e2e "+smokeE2E.String()+", -mode=faults "+faults.Estimate(faults.SmokeSettings()).Round(time.Second).String()+", -mode=keyed "+keyed.Estimate(keyed.SmokeOptions()).Round(time.Second).String()+"; checks that the code runs, its figures mean nothing")
	fs.StringVar(&c.merge, "merge", "", "merge into the results `FILE` (written by -output=json): the cases measured now replace\nthose of the same name, or are added, and the run is recorded in its updates")
	fs.StringVar(&c.redis, "redis", envOr(e2e.EnvRedisAddr, e2e.DefaultRedisAddr),
		"-mode=e2e: the Redis server's `host:port`, $"+e2e.EnvRedisAddr+" if set; empty: leave Redis out")
	fs.StringVar(&c.postgres, "postgres", envOr(e2e.EnvPostgresDSN, e2e.DefaultPostgresDSN),
		"-mode=e2e: the PostgreSQL connection string (`DSN`), $"+e2e.EnvPostgresDSN+" if set; empty: leave PostgreSQL out")
	fs.StringVar(&c.keyedCases, "keyed-cases", strings.Join(keyed.CaseNames, ","),
		"-mode=keyed: the cases to run, comma-separated: "+strings.Join(keyed.CaseNames, "|"))
	fs.StringVar(&c.keyedDSN, "keyed-postgres", "",
		"-mode=keyed: run the steady and shifting cases on the PostgreSQL server of this connection string (`DSN`,\n"+
			"a superuser's; they make their tenant databases on it and drop them after), e.g. $"+e2e.EnvPostgresDSN+",\n"+
			"instead of on the private server the mode starts")
	fs.DurationVar(&c.keyedShift, "keyed-shift", time.Duration(keyed.SplitSettings().ShiftNs),
		"-mode=keyed: how often the shifting case deals the tenants' ranks again")
	// The usage shows the default connection string without its password.
	fs.Lookup("postgres").DefValue = e2e.Redact(c.postgres)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage:
  poolbench [flags]                     measure, print tables
  poolbench report -in FILE [-docs DIR] write BENCHMARKS.md, its pages and charts from a results file
  poolbench publish [-dry-run]          measure the published set at this commit, write the docs (see -h)
  poolbench icount [-h]                 count instructions per op under callgrind (see -h)

Flags:
`)
		fs.PrintDefaults()
	}
	return mode
}

// setModes sets c's modes from -mode's comma-separated list.
func (c *config) setModes(list string) error {
	for _, m := range strings.Split(list, ",") {
		m = strings.TrimSpace(m)
		switch _, ok := modes[m]; {
		case m == modeE2E:
			c.e2e = true
		case m == modeFaults:
			c.faults = true
		case m == modeKeyed:
			c.keyed = true
		case !ok:
			return fmt.Errorf("-mode: unknown mode %q (want %s)", m, strings.Join(modeNames, ", "))
		}
		if !slices.Contains(c.modes, m) {
			c.modes = append(c.modes, m)
		}
	}
	return nil
}

// setKeyedCases sets the keyed mode's cases from -keyed-cases.
func (c *config) setKeyedCases() error {
	var names []string
	for _, name := range strings.Split(c.keyedCases, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(keyed.CaseNames, name) {
			return fmt.Errorf("-keyed-cases: unknown case %q (want %s)", name, strings.Join(keyed.CaseNames, ", "))
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	c.keyedOptions.Cases = names
	return nil
}

// validate checks the flags' values and that fs has no argument left.
func (c *config) validate(fs *flag.FlagSet) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.workers < 0:
		return fmt.Errorf("-workers must be >= 0, got %d", c.workers)
	case c.ops < 0:
		return fmt.Errorf("-ops must be >= 0, got %d", c.ops)
	case c.ops == 0 && c.duration <= 0:
		return fmt.Errorf("-duration must be > 0 when -ops is 0, got %v", c.duration)
	case c.rounds < 1:
		return fmt.Errorf("-rounds must be >= 1, got %d", c.rounds)
	case c.keyedShift <= 0:
		return fmt.Errorf("-keyed-shift must be > 0, got %v", c.keyedShift)
	case !slices.Contains([]string{"text", "json", "markdown"}, c.output):
		return fmt.Errorf("-output: unknown format %q (want text, json or markdown)", c.output)
	}
	return nil
}

// Smoke runs' spans.
const (
	smokeDuration = 5 * time.Millisecond
	smokeE2E      = 20 * time.Millisecond
)

// applySpans sets the spans the flags did not: the end-to-end duration,
// the fault and keyed settings, and with -smoke the short ones. A -duration
// or -rounds given applies to every keyed case too (a split case's warm-up
// then takes at most a quarter of the duration).
func (c *config) applySpans(fs *flag.FlagSet) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	ko := keyed.PublishOptions()
	c.e2eDur, c.faultSettings = e2eDuration, faults.Settings()
	if c.smoke {
		ko = keyed.SmokeOptions()
		c.e2eDur, c.faultSettings = smokeE2E, faults.SmokeSettings()
		if !set["duration"] {
			c.duration = smokeDuration
		}
		if !set["rounds"] {
			c.rounds = 1
		}
	}
	if set["duration"] {
		c.e2eDur = c.duration
		ko.Settings.DurationNs, ko.Split.DurationNs = c.duration.Nanoseconds(), c.duration.Nanoseconds()
		ko.Split.WarmupNs = min(ko.Split.WarmupNs, c.duration.Nanoseconds()/4)
	}
	if set["rounds"] {
		ko.Settings.Rounds, ko.Split.Rounds = c.rounds, c.rounds
	}
	if set["keyed-shift"] {
		ko.Split.ShiftNs = c.keyedShift.Nanoseconds()
	}
	ko.Cases, ko.DSN = c.keyedOptions.Cases, c.keyedDSN
	c.keyedOptions = ko
}

// envOr returns $name, or def if it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// maxSize is the end-to-end pools' MaxSize.
func (c config) maxSize() int {
	if c.workers > 0 {
		return c.workers
	}
	return e2e.DefaultMaxSize
}

// cases returns the cases of c's modes, each once.
func (c config) cases() []workload.Case {
	var out []workload.Case
	seen := map[string]bool{}
	for _, m := range c.modes {
		if m == modeE2E || m == modeFaults || m == modeKeyed {
			continue
		}
		for _, k := range modes[m](c.workers) {
			if !seen[k.Name()] {
				seen[k.Name()] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// runContext is run under ctx, which Ctrl-C cancels.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "report":
			return runReport(args[1:], stderr)
		case "publish":
			return runPublish(ctx, args[1:], stderr)
		case "icount":
			return runIcount(ctx, args[1:], stdout, stderr)
		case childCommand:
			return runIcountChild(args[1:], stdout, stderr)
		}
	}
	c, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	f, err := measureFile(ctx, c, args, stderr)
	code := exitOK
	switch {
	case errors.Is(err, measure.ErrInterrupted):
		fmt.Fprintln(stderr, "poolbench: interrupted; printing what was measured so far")
		code = exitInterrupted
	case err != nil:
		fmt.Fprintf(stderr, "poolbench: %v\n", err)
		return exitFailed
	}
	if c.merge != "" {
		old, err := readResults(c.merge)
		if err != nil {
			fmt.Fprintf(stderr, "poolbench: -merge: %v\n", err)
			return exitFailed
		}
		f = results.Merge(old, f)
	}
	if err := write(f, c, stdout); err != nil {
		fmt.Fprintf(stderr, "poolbench: %v\n", err)
		return exitFailed
	}
	return code
}

// measureFile runs what c asks for, args being its flags, and returns the
// results; measure.ErrInterrupted with those measured so far if ctx ended
// first.
func measureFile(ctx context.Context, c config, args []string, stderr io.Writer) (results.File, error) {
	f := results.File{
		Schema:  results.Schema,
		Command: commandLine(args),
		Note:    c.note,
		Machine: results.ThisMachine(),
		Settings: results.Settings{
			Mode: strings.Join(c.modes, ","), Rounds: c.rounds, Ops: c.ops, Workers: c.workers,
		},
	}
	if c.ops == 0 {
		f.Settings.DurationNs = c.duration.Nanoseconds()
	}
	cases, err := measure.Run(ctx, c.cases(), measure.Options{
		Rounds: c.rounds, Ops: c.ops, Duration: c.duration,
		Progress: stderr, ProgressAfter: 3 * time.Second,
	})
	f.Cases = cases
	if c.e2e && err == nil {
		err = runE2E(ctx, c, &f, stderr)
	}
	if c.faults && err == nil {
		err = runFaults(ctx, c, &f, stderr)
	}
	if c.keyed && err == nil {
		err = runKeyed(ctx, c, &f, stderr)
	}
	f.Interrupted = errors.Is(err, measure.ErrInterrupted)
	return f, err
}

// readResults reads a results file.
func readResults(path string) (results.File, error) {
	file, err := os.Open(path)
	if err != nil {
		return results.File{}, err
	}
	defer file.Close()
	f, err := results.ReadJSON(file)
	if err != nil {
		return results.File{}, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// runE2E measures the end-to-end cases of c into f: it starts the echo
// server, checks the other servers (a server that does not answer is
// skipped, with a note on stderr and in f), and runs the cases.
func runE2E(ctx context.Context, c config, f *results.File, stderr io.Writer) error {
	es := &results.E2ESettings{
		Ops: c.ops, MaxSize: c.maxSize(),
		LocalPortRange: sockets.Sysctl("net.ipv4.ip_local_port_range"),
		TCPTWReuse:     sockets.Sysctl("net.ipv4.tcp_tw_reuse"),
	}
	if c.ops == 0 {
		es.DurationNs = c.e2eDur.Nanoseconds()
	}
	f.Settings.E2E = es
	env, err := e2e.Open(ctx, e2e.Options{RedisAddr: c.redis, PostgresDSN: c.postgres, PgBouncer: true, MaxSize: c.maxSize()})
	if err != nil {
		return err
	}
	defer env.Close()
	if ctx.Err() != nil { // the probes failed for that reason
		return measure.ErrInterrupted
	}
	if c.redis == "" {
		env.Skipped = append(env.Skipped, results.Skip{Server: e2e.ServerRedis, Reason: "-redis is empty"})
	}
	if c.postgres == "" {
		env.Skipped = append(env.Skipped, results.Skip{Server: e2e.ServerPostgres, Reason: "-postgres is empty"})
	}
	f.Skipped = env.Skipped
	for _, s := range env.Skipped {
		fmt.Fprintf(stderr, "poolbench: e2e: skipping %s\n", results.SkipLine(s))
	}
	cases, err := measure.Run(ctx, env.Cases(context.Background(), c.maxSize()), measure.Options{
		Rounds: c.rounds, Ops: c.ops, Duration: c.e2eDur,
		Progress: stderr, ProgressAfter: 3 * time.Second,
	})
	f.Cases = append(f.Cases, cases...)
	return err
}

// runFaults runs the faults phase into f.
func runFaults(ctx context.Context, c config, f *results.File, stderr io.Writer) error {
	fmt.Fprintf(stderr, "poolbench: faults: about %v\n", faults.Estimate(c.faultSettings).Round(time.Second))
	fr, err := faults.Run(ctx, faults.Options{Settings: c.faultSettings, Progress: stderr})
	if fr != nil {
		for _, s := range fr.Skipped {
			fmt.Fprintf(stderr, "poolbench: faults: skipping %s\n", results.SkipLine(s))
		}
		f.Faults = fr
	}
	if errors.Is(err, faults.ErrInterrupted) {
		return measure.ErrInterrupted
	}
	return err
}

// runKeyed runs the keyed mode into f.
func runKeyed(ctx context.Context, c config, f *results.File, stderr io.Writer) error {
	opt := c.keyedOptions
	opt.Progress = stderr
	fmt.Fprintf(stderr, "poolbench: keyed: %s, about %v\n", strings.Join(opt.Cases, ", "), keyed.Estimate(opt).Round(time.Second))
	k, err := keyed.Run(ctx, opt)
	if k != nil {
		for _, s := range k.Skipped {
			fmt.Fprintf(stderr, "poolbench: keyed: skipping %s\n", results.SkipLine(s))
		}
		for _, sc := range k.Splits {
			for _, s := range sc.Skipped {
				fmt.Fprintf(stderr, "poolbench: keyed %s: skipping %s\n", sc.Name, results.SkipLine(s))
			}
		}
		f.Keyed = k
	}
	if errors.Is(err, keyed.ErrInterrupted) {
		return measure.ErrInterrupted
	}
	return err
}

// commandLine is the invocation, quoted for a POSIX shell, with the
// password of a -postgres connection string hidden.
func commandLine(args []string) string {
	words := []string{"poolbench"}
	dsnNext := false
	for _, a := range args {
		switch name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "="); {
		case dsnNext:
			a = e2e.Redact(a)
		case strings.HasPrefix(a, "-") && dsnFlag(name) && hasValue:
			a = a[:len(a)-len(value)] + e2e.Redact(value)
		}
		dsnNext = strings.HasPrefix(a, "-") && dsnFlag(strings.TrimLeft(a, "-"))
		if a == "" || strings.IndexFunc(a, unsafe) >= 0 {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		words = append(words, a)
	}
	return results.ScrubPaths(strings.Join(words, " "))
}

// dsnFlag reports whether the flag called name takes a connection string.
func dsnFlag(name string) bool { return name == "postgres" || name == "keyed-postgres" }

// unsafe reports whether r needs quoting in a shell word.
func unsafe(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=,:+@%", r))
}

// write prints f in c's format, to c's file or stdout.
func write(f results.File, c config, stdout io.Writer) (err error) {
	w := stdout
	if c.out != "" {
		file, err := os.Create(c.out)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := file.Close(); err == nil {
				err = cerr
			}
		}()
		w = file
	}
	switch c.output {
	case "json":
		return results.WriteJSON(w, f)
	case "markdown":
		return results.WriteMarkdown(w, f)
	}
	return results.WriteText(w, f)
}

// runReport is `poolbench report`.
func runReport(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("poolbench report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "the results `FILE` (written by poolbench -output=json -o FILE); required")
	docs := fs.String("docs", "", "the `DIR` that gets BENCHMARKS.md and benchmarks/ (default: docs/ of the repository around the working directory)")
	mixed := fs.Bool("mixed", false, "accept results from several commits or from a tree with uncommitted changes,\nand say so on every page (without it such results are refused)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage:\n  poolbench report -in FILE [-docs DIR] [-mixed]\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if *in == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "poolbench report: -in FILE is required, and nothing else")
		fs.Usage()
		return exitUsage
	}
	f, err := readResults(*in)
	if err != nil {
		fmt.Fprintf(stderr, "poolbench report: %v\n", err)
		return exitFailed
	}
	root := repoRoot()
	opt := report.Options{Docs: *docs, In: fromRoot(root, *in), Mixed: *mixed}
	if err := writeReport(f, opt, root, *docs == "", stderr); err != nil {
		fmt.Fprintf(stderr, "poolbench report: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// writeReport writes the pages of f (to opt.Docs, or the docs/ of root if
// empty) and, with readme, the headline of root's README.md.
func writeReport(f results.File, opt report.Options, root string, readme bool, stderr io.Writer) error {
	if opt.Docs == "" {
		opt.Docs = filepath.Join(root, "docs")
	}
	if err := report.Write(f, opt); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "poolbench report: wrote %s, %d pages and their charts in %s\n",
		filepath.Join(opt.Docs, "BENCHMARKS.md"), len(report.Pages(f)), filepath.Join(opt.Docs, report.ChartDir))
	if !readme {
		return nil
	}
	// The README's figures come from the same file.
	path := filepath.Join(root, "README.md")
	if err := report.UpdateReadme(path, f, opt); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "poolbench report: wrote the headline of %s\n", path)
	return nil
}

// repoRoot is the nearest directory at or above the working directory that
// holds a go.work, or the working directory if none does.
func repoRoot() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return wd
		}
	}
}

// fromRoot names path relative to root, with forward slashes, for the docs.
func fromRoot(root, path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.ToSlash(path)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(path)
	}
	return filepath.ToSlash(rel)
}
