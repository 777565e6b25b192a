package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/poolkit/poolkit/benches/internal/e2e"
	"github.com/poolkit/poolkit/benches/internal/faults"
	"github.com/poolkit/poolkit/benches/internal/keyed"
	"github.com/poolkit/poolkit/benches/internal/measure"
	"github.com/poolkit/poolkit/benches/internal/report"
	"github.com/poolkit/poolkit/benches/internal/results"
)

// publishResults is where publish writes the results, from the repository
// root.
const publishResults = "docs/benchmarks/results.json"

// publishStep is one part of the published set, measured on its own and
// kept in the work directory, so that a stopped publish resumes after the
// parts it finished.
type publishStep struct {
	name string
	// args are poolbench's flags for the step (nil for the instruction
	// counts, which run `poolbench icount`).
	args []string
	// estimate is about how long the step takes.
	estimate func() time.Duration
}

// publishSteps are the published set: every object and buffer case, the
// end-to-end cases, the faults phase, the keyed case and the instruction
// counts.
func publishSteps() []publishStep {
	rounds := strconv.Itoa(report.PublishRounds)
	all := parsed("-mode=all", "-rounds="+rounds)
	return []publishStep{
		{name: "cases", args: []string{"-mode=all", "-rounds=" + rounds}, estimate: func() time.Duration {
			return measure.Estimate(all.cases(), measure.Options{Rounds: all.rounds, Duration: all.duration})
		}},
		{name: "e2e", args: []string{"-mode=e2e", "-rounds=" + rounds}, estimate: func() time.Duration {
			return e2e.Estimate(report.PublishRounds, e2eDuration)
		}},
		{name: "faults", args: []string{"-mode=faults"}, estimate: func() time.Duration {
			return faults.Estimate(faults.Settings())
		}},
		{name: "keyed", args: []string{"-mode=keyed"}, estimate: func() time.Duration {
			return keyed.Estimate(keyed.PublishOptions())
		}},
		{name: "icount", estimate: func() time.Duration { return 5 * time.Minute }},
	}
}

// parsed is the config of args, which must be good.
func parsed(args ...string) config {
	c, err := parse(args, io.Discard)
	if err != nil {
		panic("poolbench: bug: " + err.Error())
	}
	return c
}

// publishOptions are publish's flags.
type publishOptions struct {
	work   string // the directory of the finished steps
	dryRun bool
	fresh  bool // measure every step again
}

// runPublish is `poolbench publish`.
func runPublish(ctx context.Context, args []string, stderr io.Writer) int {
	opt, code := parsePublish(args, stderr)
	if code >= 0 {
		return code
	}
	root := repoRoot()
	head, err := cleanHead(root)
	switch {
	case err != nil && opt.dryRun:
		fmt.Fprintf(stderr, "poolbench publish: would refuse to run now: %v\n", err)
	case err != nil:
		fmt.Fprintf(stderr, "poolbench publish: %v\n", err)
		return exitFailed
	}
	if opt.work == "" {
		opt.work = filepath.Join(os.TempDir(), "poolbench-publish-"+shortHash(head))
	}
	steps := publishSteps()
	printPlan(stderr, steps, opt, head)
	if opt.dryRun {
		return exitOK
	}
	if err := publish(ctx, root, head, steps, opt, stderr); err != nil {
		fmt.Fprintf(stderr, "poolbench publish: %v\n", err)
		if errors.Is(err, measure.ErrInterrupted) {
			fmt.Fprintf(stderr, "poolbench publish: the finished parts are kept in %s; run it again to resume\n", opt.work)
			return exitInterrupted
		}
		return exitFailed
	}
	fmt.Fprintf(stderr, "poolbench publish: done; commit %s, docs/BENCHMARKS.md, docs/benchmarks/ and README.md\n", publishResults)
	return exitOK
}

// parsePublish parses publish's flags; code is -1 to go on, else the exit
// status.
func parsePublish(args []string, stderr io.Writer) (publishOptions, int) {
	var opt publishOptions
	fs := flag.NewFlagSet("poolbench publish", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opt.work, "work", "", "keep the finished parts in `DIR` (default: poolbench-publish-COMMIT in the temporary directory)")
	fs.BoolVar(&opt.dryRun, "dry-run", false, "print what would run and about how long it takes, and stop")
	fs.BoolVar(&opt.fresh, "fresh", false, "measure every part again, even those finished at this commit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage:
  poolbench publish [-dry-run] [-fresh] [-work DIR]

Measures the published set at the checked-out commit, which must have no
uncommitted changes: every object and buffer case, the end-to-end cases, the
faults phase, the keyed case and the instruction counts. Each finished part is kept in the
work directory, so that a publish stopped halfway (Ctrl-C) resumes where it
stopped when run again at the same commit. Then it writes
`+publishResults+`, docs/BENCHMARKS.md, the pages and charts of
docs/benchmarks/ and the headline of README.md.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return opt, exitOK
		}
		return opt, exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "poolbench publish: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return opt, exitUsage
	}
	return opt, -1
}

// cleanHead returns the commit checked out at root, or an error if it is
// unknown or tracked files have uncommitted changes.
func cleanHead(root string) (string, error) {
	head, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		return "unknown", fmt.Errorf("no commit to measure: %w", err)
	}
	status, err := git(root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return head, err
	}
	if status != "" {
		return head, fmt.Errorf("the tree has uncommitted changes; commit or stash them first:\n%s", status)
	}
	return head, nil
}

// git runs git in dir and returns its trimmed output.
func git(dir string, args ...string) (string, error) {
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// printPlan says what publish runs, which parts it keeps, and about how
// long the rest takes.
func printPlan(w io.Writer, steps []publishStep, opt publishOptions, head string) {
	fmt.Fprintf(w, "poolbench publish: at commit %s; parts kept in %s\n", shortHash(head), opt.work)
	var total time.Duration
	for _, s := range steps {
		what := "poolbench " + strings.Join(s.args, " ")
		if s.args == nil {
			what = "poolbench icount"
		}
		if !opt.fresh && kept(opt.work, s.name, head) {
			fmt.Fprintf(w, "  %-7s %-40s finished earlier at this commit: kept\n", s.name, what)
			continue
		}
		d := s.estimate()
		total += d
		fmt.Fprintf(w, "  %-7s %-40s about %v\n", s.name, what, d.Round(time.Minute))
	}
	fmt.Fprintf(w, "poolbench publish: about %v in all, on a quiet machine; the machine should do nothing else meanwhile\n",
		total.Round(time.Minute))
}

// partPath is where a step's results are kept.
func partPath(work, name string) string { return filepath.Join(work, name+".json") }

// kept reports whether the step's part was finished at commit head, clean.
func kept(work, name, head string) bool {
	f, err := readResults(partPath(work, name))
	if err != nil || f.Interrupted {
		return false
	}
	m := f.Machine
	if f.Icount != nil && len(f.Cases) == 0 && f.Faults == nil && f.Keyed == nil {
		m = f.Icount.Machine
	}
	return m.Commit == head && !m.Dirty
}

// publish runs the steps not kept, then combines the parts and writes the
// results, the pages and the README's headline.
func publish(ctx context.Context, root, head string, steps []publishStep, opt publishOptions, stderr io.Writer) error {
	if err := os.MkdirAll(opt.work, 0o755); err != nil {
		return err
	}
	for _, s := range steps {
		if !opt.fresh && kept(opt.work, s.name, head) {
			continue
		}
		if h, err := cleanHead(root); err != nil || h != head {
			return fmt.Errorf("the tree changed during the run (now %s): %v", shortHash(h), err)
		}
		fmt.Fprintf(stderr, "poolbench publish: %s\n", s.name)
		if err := runStep(ctx, s, partPath(opt.work, s.name), stderr); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	f, err := combine(opt.work, steps)
	if err != nil {
		return err
	}
	if err := writeJSONFile(filepath.Join(root, publishResults), f); err != nil {
		return err
	}
	return writeReport(f, report.Options{In: publishResults}, root, true, stderr)
}

// runStep measures one step into path.
func runStep(ctx context.Context, s publishStep, path string, stderr io.Writer) error {
	if s.args == nil {
		return runIcountStep(ctx, path, stderr)
	}
	c := parsed(s.args...)
	f, err := measureFile(ctx, c, s.args, stderr)
	if err != nil {
		return err
	}
	return writeJSONFile(path, f)
}

// runIcountStep counts the instructions into a results file of its own at
// path.
func runIcountStep(ctx context.Context, path string, stderr io.Writer) error {
	if err := writeJSONFile(path, results.File{Schema: results.Schema}); err != nil {
		return err
	}
	if code := runIcount(ctx, []string{"-merge", path}, io.Discard, stderr); code != exitOK {
		if code == exitInterrupted || ctx.Err() != nil {
			return measure.ErrInterrupted
		}
		return fmt.Errorf("poolbench icount exited %d", code)
	}
	f, err := readResults(path)
	if err != nil {
		return err
	}
	if f.Icount == nil {
		return errors.New("poolbench icount wrote no counts")
	}
	f.Icount.Command = "poolbench icount"
	f.Machine = f.Icount.Machine
	return writeJSONFile(path, f)
}

// combine makes one results file of the parts, as one run.
func combine(work string, steps []publishStep) (results.File, error) {
	var out results.File
	for i, s := range steps {
		f, err := readResults(partPath(work, s.name))
		if err != nil {
			return out, err
		}
		if i == 0 {
			out = f
			out.Command = "poolbench publish"
			out.Settings.Mode = "all,e2e,faults,keyed"
			continue
		}
		out.Cases = append(out.Cases, f.Cases...)
		out.Skipped = append(out.Skipped, f.Skipped...)
		if f.Settings.E2E != nil {
			out.Settings.E2E = f.Settings.E2E
		}
		if f.Faults != nil {
			out.Faults = f.Faults
		}
		if f.Keyed != nil {
			out.Keyed = f.Keyed
		}
		if f.Icount != nil {
			out.Icount = f.Icount
		}
	}
	return out, nil
}

// writeJSONFile writes f to path.
func writeJSONFile(path string, f results.File) (err error) {
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
	}()
	return results.WriteJSON(file, f)
}
