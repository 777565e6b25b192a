// Command testall runs the tests of every module of the repository — the
// root module, benches, examples and the integration modules, which go.work
// ties together — as one go test command, and ends with one line per module
// whose tests skipped, saying what skipped and what would run it:
//
//	go run ./internal/cmd/testall [go test flags]
//
// Its arguments go to go test before the package patterns (-race, -count=1,
// -run …). Its output is go test's: a line per package, and the output of
// the tests that failed. It exits with go test's status.
//
// go test alone prints nothing but "ok" for a package whose integration
// tests all skipped (their servers' variables unset); the skip lines are
// what tells a contributor that they did not run.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
)

// patterns are every module's packages (see CONTRIBUTING.md, "Running the
// checks"): ./... stops at the nested modules.
var patterns = []string{"./...", "./benches/...", "./examples/...",
	"./contrib/pgxmanager/...", "./contrib/poolprom/...", "./contrib/poolotel/..."}

// modules are the modules' import paths, the longest first, to name the
// module of a package.
var modules = []string{
	"github.com/poolkit/poolkit/contrib/pgxmanager",
	"github.com/poolkit/poolkit/contrib/poolprom",
	"github.com/poolkit/poolkit/contrib/poolotel",
	"github.com/poolkit/poolkit/benches",
	"github.com/poolkit/poolkit/examples",
	"github.com/poolkit/poolkit",
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// variable finds the environment variable a skip message names.
var variable = regexp.MustCompile(`\b(POOLKIT_[A-Z0-9_]+)\b`)

func main() {
	args := append(append([]string{"test", "-json"}, os.Args[1:]...), patterns...)
	cmd := exec.Command("go", args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	skips := render(out, os.Stdout)
	status := 0
	if err := cmd.Wait(); err != nil {
		status = 1
		if ee, ok := err.(*exec.ExitError); ok {
			status = ee.ExitCode()
		}
	}
	report(os.Stdout, skips)
	os.Exit(status)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testall:", err)
	os.Exit(2)
}

// skipped is one module's skipped tests, by the reason they give.
type skipped map[string][]string

// render prints go test's lines from its -json stream r — a package's
// own lines (its summary, and its output when it failed) and a test's
// output when it failed — and returns the skipped tests of each module.
func render(r io.Reader, w io.Writer) map[string]skipped {
	skips := map[string]skipped{}
	held := map[string][]string{} // a running test's output, package+test
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			fmt.Fprintln(w, sc.Text())
			continue
		}
		id := ev.Package + "\x00" + ev.Test
		switch {
		case ev.Action == "build-output":
			fmt.Fprint(w, ev.Output)
		case ev.Test == "" && ev.Action == "output" && summary(ev.Output):
			if strings.HasPrefix(ev.Output, "FAIL") {
				for _, line := range held[id] { // TestMain's, a panic's
					fmt.Fprint(w, line)
				}
			}
			delete(held, id)
			fmt.Fprint(w, ev.Output) // go test's line for the package
		case ev.Action == "output":
			held[id] = append(held[id], ev.Output)
		case ev.Action == "fail":
			for _, line := range held[id] {
				fmt.Fprint(w, line)
			}
			delete(held, id)
		case ev.Action == "skip" && ev.Test != "":
			m := moduleOf(ev.Package)
			if skips[m] == nil {
				skips[m] = skipped{}
			}
			r := reason(held[id])
			skips[m][r] = append(skips[m][r], ev.Test)
			delete(held, id)
		case ev.Action == "pass" || ev.Action == "skip":
			delete(held, id)
		}
	}
	return skips
}

// summary reports whether line is go test's one line for a package
// ("ok", "FAIL" or "?"): the only package output go test shows of a package
// that passed.
func summary(line string) bool {
	for _, p := range []string{"ok  \t", "FAIL\t", "?   \t"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// reason is what a skipped test's output says about its skip: the
// variable that runs it, if it names one, else its last line.
func reason(output []string) string {
	text := strings.Join(output, "")
	if v := variable.FindString(text); v != "" {
		return "set " + v + " to run them"
	}
	if strings.TrimSpace(text) == "" {
		return "no reason given"
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		last := strings.TrimSpace(lines[i])
		if last == "" || strings.HasPrefix(last, "--- ") || strings.HasPrefix(last, "=== ") {
			continue // go test's own lines ("--- SKIP: …", "=== RUN …")
		}
		if i := strings.Index(last, ": "); i >= 0 && strings.Contains(last[:i], ".go:") {
			last = last[i+2:] // "file_test.go:12: reason"
		}
		return last
	}
	return "no reason given"
}

// moduleOf names the module of package pkg by its path in the repository
// ("root module" for the root).
func moduleOf(pkg string) string {
	for _, m := range modules {
		if pkg == m || strings.HasPrefix(pkg, m+"/") {
			if rel := strings.TrimPrefix(m, "github.com/poolkit/poolkit"); rel != "" {
				return strings.TrimPrefix(rel, "/")
			}
			return "root module"
		}
	}
	return pkg
}

// report prints one line per module whose tests skipped.
func report(w io.Writer, skips map[string]skipped) {
	var ms []string
	for m := range skips {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	for _, m := range ms {
		var parts []string
		for r, tests := range skips[m] {
			sort.Strings(tests)
			names := strings.Join(tests, ", ")
			if len(tests) > 2 {
				names = tests[0] + ", " + tests[1] + ", …"
			}
			what := "tests"
			if len(tests) == 1 {
				what = "test"
			}
			parts = append(parts, fmt.Sprintf("%d %s skipped (%s): %s", len(tests), what, names, r))
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "%s: %s\n", m, strings.Join(parts, "; "))
	}
}
