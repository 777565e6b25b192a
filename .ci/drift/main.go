// Command drift fails when the docs name what the code no longer has. Run
// from the repository root (.ci/run does: go run ./.ci/drift); it reads every
// file under the current directory, every module of the workspace included.
//
// Two checks:
//
// Tests named. A test, benchmark, example or fuzz target named in prose —
// a word matching Test, Benchmark, Example or Fuzz followed by an upper-case
// letter, a digit or an underscore, then word characters (Go's rule for such
// names) — must be a top-level func of that name in some _test.go file of the
// repository. A subtest's path names its test (the name stops at the slash);
// a name followed by "*" is a prefix, which some test must have. The prose
// checked is
// every Markdown file (README.md, docs/, the decision records) and every
// comment of every Go file, except decision data (docs/decisions/data/,
// measurements and logs kept as they were taken, which name the tests of
// their day) and testdata/ folders (fixtures).
//
// Names in DESIGN.md. docs/DESIGN.md describes the code as built, so every
// backquoted span in it that is a Go name — identifiers joined by dots,
// optionally followed by one bracketed type argument list and by "()" (as
// `Stats.ClosedBy`, `entry[T]`, `Local.Retire`, `Enter()`) — must resolve:
//
//   - a bare identifier must occur as an identifier in the Go source (any
//     file, any module) or be a build tag of a //go:build line;
//   - in a list item that opens with a bold backquoted type written with its
//     type parameters or fields (- **`entry[T]`**, - **`Lease[T]{e, gen}`**:
//     the item describes that type), a bare identifier that starts with a
//     lower-case letter must be a field or method of that type or a
//     package-level name of its package: what the item lists as the type's
//     fields must be its fields;
//   - in a qualified name X.y…, when X is a package of the repository, y must
//     be one of its package-level names; when X is a type declared in the
//     repository, y must be one of its fields or methods (or, for an
//     interface, its methods); each further part is checked the same way
//     against the type of the field before it when that is known, and is
//     otherwise only required to occur as an identifier. A qualifier that is
//     neither (a standard-library package such as runtime, a variable such as
//     ctx) leaves y required to occur as an identifier only when X is not a
//     standard-library package.
//
// Spans that are not names (expressions such as `gen → gen+1`, paths,
// flags, file names such as `slots.go`) are not checked.
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	src, err := load(os.DirFS("."))
	if err != nil {
		fmt.Fprintln(os.Stderr, "drift:", err)
		os.Exit(2)
	}
	problems := src.testNames()
	problems = append(problems, src.designNames()...)
	if len(problems) == 0 {
		fmt.Printf("drift: %d test names in %d files, %d names in %s: all exist\n",
			src.testRefs, len(src.files), src.designRefs, designPath)
		return
	}
	sort.Strings(problems)
	for _, p := range problems {
		fmt.Println(p)
	}
	fmt.Fprintf(os.Stderr, "drift: %d names in the docs that the code does not have\n", len(problems))
	os.Exit(1)
}

const designPath = "docs/DESIGN.md"

// skipped reports whether path (slash-separated, relative to the root) is
// outside the checks: version control, decision data and test fixtures.
func skipped(path string) bool {
	if path == ".git" || strings.HasPrefix(path, ".git/") || strings.HasPrefix(path, "docs/decisions/data/") {
		return true
	}
	for _, part := range strings.Split(path, "/") {
		if part == "testdata" {
			return true
		}
	}
	return false
}

// load reads and parses every Go and Markdown file of fsys.
func load(fsys fs.FS) (*source, error) {
	src := newSource()
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if skipped(path) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		switch filepath.Ext(path) {
		case ".go":
			b, err := fs.ReadFile(fsys, path)
			if err != nil {
				return err
			}
			return src.addGo(path, b)
		case ".md":
			b, err := fs.ReadFile(fsys, path)
			if err != nil {
				return err
			}
			src.addMarkdown(path, string(b))
		}
		return nil
	})
	return src, err
}
