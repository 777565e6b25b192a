package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/poolkit/poolkit/benches/internal/icount"
	"github.com/poolkit/poolkit/benches/internal/results"
)

// childCommand is the subcommand poolbench icount runs itself as, under
// valgrind, once per op and op count; not for people.
const childCommand = "icount-child"

// DefaultTolerance is how far above the baseline an instruction count may
// rise before poolbench icount -baseline fails.
const DefaultTolerance = 0.05

const icountUsage = `Usage:
  poolbench icount [-merge FILE]                count instructions and allocations per op of
                                                every contender under callgrind; print them,
                                                and with -merge put them into a results file
  poolbench icount -baseline FILE               count poolkit's hot paths and fail (exit 1) if
                                                one costs more than -tolerance above FILE
  poolbench icount -baseline FILE -update       count poolkit's hot paths and write FILE

Each count runs the op in a process of its own under valgrind --tool=callgrind,
with ` + results.IcountEnv + `, for -n1 and for -n2 ops;
the difference of the instructions counted, divided by n2 - n1, is the cost of one op.

Flags:
`

// runIcount is `poolbench icount`.
func runIcount(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("poolbench icount", flag.ContinueOnError)
	fs.SetOutput(stderr)
	merge := fs.String("merge", "", "put the counts into the results `FILE` (written by poolbench -output=json), in place of those it holds, and rewrite it")
	baseline := fs.String("baseline", "", "count only the guarded hot paths and compare them with the baseline `FILE`")
	update := fs.Bool("update", false, "with -baseline: write the counts to the baseline file instead of comparing")
	tolerance := fs.Float64("tolerance", DefaultTolerance, "with -baseline: the rise above the baseline that fails, as a fraction")
	n1 := fs.Int("n1", icount.DefaultN1, "ops of the first run of each op")
	n2 := fs.Int("n2", icount.DefaultN2, "ops of the second run of each op")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), icountUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	bad := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "poolbench icount: "+format+"\n", args...)
		fs.Usage()
		return exitUsage
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q", fs.Arg(0))
	case *update && *baseline == "":
		return bad("-update needs -baseline FILE")
	case *baseline != "" && *merge != "":
		return bad("-baseline and -merge do not go together")
	case *tolerance < 0:
		return bad("-tolerance must be >= 0, got %v", *tolerance)
	case *n1 < 1 || *n2 <= *n1:
		return bad("want 0 < -n1 < -n2, got %d and %d", *n1, *n2)
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "poolbench icount: %v\n", err)
		return exitFailed
	}
	ops := icount.Ops()
	if *baseline != "" {
		ops = icount.Guarded()
	}
	r, err := icount.Measure(ctx, ops, icount.Options{
		Self: []string{exe, childCommand}, N1: *n1, N2: *n2, Progress: stderr,
	})
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "poolbench icount: interrupted")
			return exitInterrupted
		}
		fmt.Fprintf(stderr, "poolbench icount: %v\n", err)
		return exitFailed
	}
	r.Command = commandLine(append([]string{"icount"}, args...))
	if err := results.WriteIcountText(stdout, r); err != nil {
		fmt.Fprintf(stderr, "poolbench icount: %v\n", err)
		return exitFailed
	}
	switch {
	case *baseline != "" && *update:
		err = writeFile(*baseline, func(w io.Writer) error { return results.WriteIcountJSON(w, r) })
		if err == nil {
			fmt.Fprintf(stderr, "poolbench icount: wrote the baseline %s\n", *baseline)
		}
	case *baseline != "":
		return checkBaseline(*baseline, r, *tolerance, stdout, stderr)
	case *merge != "":
		var f results.File
		if f, err = readResults(*merge); err == nil {
			f.Icount = &r
			err = writeFile(*merge, func(w io.Writer) error { return results.WriteJSON(w, f) })
		}
		if err == nil {
			fmt.Fprintf(stderr, "poolbench icount: merged the counts into %s\n", *merge)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "poolbench icount: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// checkBaseline compares r with the baseline file at path, prints both, and
// returns exitFailed if an op rose more than tolerance above it.
func checkBaseline(path string, r results.Icount, tolerance float64, stdout, stderr io.Writer) int {
	file, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "poolbench icount: %v\n", err)
		return exitFailed
	}
	base, err := results.ReadIcountJSON(file)
	file.Close()
	if err != nil {
		fmt.Fprintf(stderr, "poolbench icount: %s: %v\n", path, err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "baseline %s: %s, %s, commit %s, %s\n", path, base.Machine.GoVersion, base.Valgrind,
		short(base.Machine.Commit), base.Machine.Date)
	for _, b := range base.Ops {
		now, _ := r.Find(b.Name)
		fmt.Fprintf(stdout, "  %-32s now %8.1f  baseline %8.1f  (%+.1f%%)  allocs/op now %s, baseline %s\n",
			b.Name, now.Instructions, b.Instructions, 100*(now.Instructions/b.Instructions-1),
			results.Allocs(now.Allocs), results.Allocs(b.Allocs))
	}
	if base.Machine.GoVersion != r.Machine.GoVersion {
		fmt.Fprintf(stdout, "note: the baseline was counted with %s, this run with %s; a new compiler moves the counts\n",
			base.Machine.GoVersion, r.Machine.GoVersion)
	}
	regs, err := results.CheckIcount(base, r, tolerance)
	if err != nil {
		fmt.Fprintf(stderr, "poolbench icount: %v\n", err)
		return exitFailed
	}
	if len(regs) > 0 {
		fmt.Fprintf(stderr, "poolbench icount: the hot path costs more than %.0f%% above the baseline %s:\n", 100*tolerance, path)
		for _, g := range regs {
			fmt.Fprintf(stderr, "  %s\n", g)
		}
		fmt.Fprintf(stderr, "If the rise is deliberate, refresh the baseline in a commit of its own:\n  %s\n",
			"go run ./benches/cmd/poolbench icount -baseline "+path+" -update")
		return exitFailed
	}
	fmt.Fprintf(stdout, "ok: no hot path costs more than %.0f%% above the baseline\n", 100*tolerance)
	return exitOK
}

// runIcountChild is the child that poolbench icount runs under valgrind.
func runIcountChild(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("poolbench "+childCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	op := fs.String("op", "", "the op to run")
	n := fs.Int("n", 0, "how many times")
	if err := fs.Parse(args); err != nil || *op == "" || *n < 1 {
		fmt.Fprintf(stderr, "poolbench %s: run by poolbench icount: -op NAME -n N (N >= 1)\n", childCommand)
		return exitUsage
	}
	if err := icount.RunChild(stdout, *op, *n); err != nil {
		fmt.Fprintf(stderr, "poolbench %s: %v\n", childCommand, err)
		return exitFailed
	}
	return exitOK
}

// writeFile writes path through write, replacing it only once write has
// succeeded.
func writeFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".poolbench-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}
