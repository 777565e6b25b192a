package main

import (
	"strings"
	"testing"
	"testing/fstest"
)

// repo is a small repository: a package with a generic type and a test file,
// decision data, a fixture, and the docs given.
func repo(design, readme string) fstest.MapFS {
	return fstest.MapFS{
		"p/p.go": {Data: []byte(`//go:build !some_tag

package p

import "runtime"

// entry is one object. See TestKept.
type entry[T any] struct {
	state    int
	lastUsed int64
	m        Metrics
}

type Metrics struct{ ID uint64 }

// counters has a created field; entry has none.
type counters struct{ created int }

func errOf(ctx interface{ Err() error }) error { return ctx.Err() }

func (e *entry[T]) claim() { runtime.Gosched() }

func helper() {}
`)},
		"p/p_test.go": {Data: []byte(`package p

import "testing"

func TestKept(t *testing.T) { t.Run("Sub", func(t *testing.T) {}) }

func BenchmarkKept(b *testing.B) {}

func ExampleKept_suffix() {}
`)},
		"docs/DESIGN.md":                {Data: []byte(design)},
		"README.md":                     {Data: []byte(readme)},
		"docs/decisions/data/0001.txt":  {Data: []byte("TestGoneLongAgo")},
		"docs/decisions/data/0001.md":   {Data: []byte("TestGoneLongAgo")},
		"p/testdata/fixture_test.go":    {Data: []byte("package fixture\n\n// TestInFixture\n")},
		"docs/decisions/0001-choice.md": {Data: []byte("Measured by `BenchmarkKept/Size=1` and `TestKept/Sub`.")},
	}
}

func check(t *testing.T, fs fstest.MapFS) []string {
	t.Helper()
	src, err := load(fs)
	if err != nil {
		t.Fatal(err)
	}
	return append(src.testNames(), src.designNames()...)
}

func TestCleanRepositoryPasses(t *testing.T) {
	design := "- **`entry[T]`**, one per object: `state`, `lastUsed` and `m`\n" +
		"  (a `Metrics`), claimed by `claim`; see `helper()`, `Metrics.ID`, `entry.m.ID`,\n" +
		"  `runtime.Gosched`, `ctx.Err()`, `some_tag`, `p.go`, `gen → gen+1`.\n" +
		"\n`lastUsed` is named outside the item too; `TestKept`, `ExampleKept_suffix`, `Test*`.\n"
	if got := check(t, repo(design, "Run `TestKept/Sub`; `BenchmarkKept`. Examples, Tests, Benchmarks, Fuzzing.")); len(got) != 0 {
		t.Fatalf("problems in a clean repository:\n%s", strings.Join(got, "\n"))
	}
}

func TestEveryKindOfDriftIsFound(t *testing.T) {
	design := "- **`entry[T]`**, one per object: `state`, `created` and `m`.\n" + // not a field of entry
		"\n`frobnicate`; `Metrics.Name`; `entry.m.Name`; `ctx.Nowhere`; `p.Missing`.\n" +
		"See TestGone and FuzzGone.\n"
	got := check(t, repo(design, "Run `TestGone/Sub`, BenchmarkGone, ExampleGone and `TestNone*`."))
	want := []string{
		"docs/DESIGN.md:1: `created`: the item describes entry",
		"docs/DESIGN.md:3: `frobnicate`: no identifier",
		"docs/DESIGN.md:3: `Metrics.Name`: Metrics has no Name",
		"docs/DESIGN.md:3: `entry.m.Name`: Metrics has no Name",
		"docs/DESIGN.md:3: `ctx.Nowhere`: no identifier of the Go source is named Nowhere",
		"docs/DESIGN.md:3: `p.Missing`: p has no Missing",
		"docs/DESIGN.md:4: TestGone is not a test",
		"docs/DESIGN.md:4: FuzzGone is not a test",
		"README.md:1: TestGone is not a test",
		"README.md:1: BenchmarkGone is not a test",
		"README.md:1: ExampleGone is not a test",
		"README.md:1: TestNone* is not a test",
	}
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w)
		}
		if !found {
			t.Errorf("missing %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
}

func TestGoCommentsAreChecked(t *testing.T) {
	fs := repo("", "")
	fs["p/q.go"] = &fstest.MapFile{Data: []byte("package p\n\n// TestKept holds; TestGoneFromComment does not.\nvar x int\n")}
	got := check(t, fs)
	if len(got) != 1 || !strings.HasPrefix(got[0], "p/q.go:3: TestGoneFromComment is not a test") {
		t.Fatalf("got %q", got)
	}
}
