// Command edges fails when a module's non-test code imports another module's
// internal packages. Run from the repository root (.ci/run does: go run
// ./.ci/edges).
//
// The modules are the folders of every go.mod outside .git and .ci, as
// .ci/run finds them; a .go file belongs to the module of the deepest such
// folder above it. The go command lets github.com/poolkit/poolkit/contrib/x
// import github.com/poolkit/poolkit/internal/y, since the paths share the
// prefix, but the two are released as modules of their own: a contrib
// release would then build only against the root releases whose internal
// package still has the API it was written against. So every .go file that
// is not a _test.go file (whatever its build constraints) must import no
// package of another module of the repository whose path, within that
// module, has an element named internal. Test files may: a test runs in the
// repository, with the modules side by side.
//
// Folders the go command ignores (testdata, and those whose names start with
// "." or "_") are not read.
package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
)

func main() {
	problems, files, err := check(os.DirFS("."))
	if err != nil {
		fmt.Fprintln(os.Stderr, "edges:", err)
		os.Exit(2)
	}
	if len(problems) == 0 {
		fmt.Printf("edges: %d non-test Go files: none imports another module's internal packages\n", files)
		return
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	fmt.Fprintf(os.Stderr, "edges: %d imports of another module's internal packages from non-test code\n", len(problems))
	os.Exit(1)
}

// module is one go.mod's folder (slash-separated, "." for the root) and
// module path.
type module struct{ dir, path string }

// ignored reports whether the folder p (slash-separated, relative to the
// root) is outside the check.
func ignored(p string) bool {
	if p == "." {
		return false
	}
	if p == ".git" || p == ".ci" {
		return true
	}
	base := path.Base(p)
	return base == "testdata" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_")
}

// check returns one line per import of another module's internal package
// from a non-test .go file of fsys, sorted, and the number of files read.
func check(fsys fs.FS) (problems []string, files int, err error) {
	var mods []module
	var goFiles []string
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if ignored(p) {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case path.Base(p) == "go.mod":
			b, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			mp, err := modulePath(b)
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			mods = append(mods, module{dir: path.Dir(p), path: mp})
		case strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go"):
			goFiles = append(goFiles, p)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	fset := token.NewFileSet()
	for _, f := range goFiles {
		own, ok := owner(mods, f)
		if !ok {
			continue // outside every module: no go command builds it
		}
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, 0, err
		}
		ast, err := parser.ParseFile(fset, f, b, parser.ImportsOnly)
		if err != nil {
			return nil, 0, err
		}
		files++
		for _, spec := range ast.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return nil, 0, fmt.Errorf("%s: %w", f, err)
			}
			m, ok := moduleOf(mods, imp)
			if !ok || m == own || !internal(strings.TrimPrefix(imp, m.path)) {
				continue
			}
			problems = append(problems, fmt.Sprintf("%s:%d: imports %s, internal to the module %s (%s)",
				f, fset.Position(spec.Pos()).Line, imp, m.path, m.dir))
		}
	}
	sort.Strings(problems)
	return problems, files, nil
}

// modulePath returns the path of go.mod's module directive.
func modulePath(gomod []byte) (string, error) {
	for _, line := range strings.Split(string(gomod), "\n") {
		f := strings.Fields(strings.TrimSpace(line))
		if len(f) >= 2 && f[0] == "module" {
			if p, err := strconv.Unquote(f[1]); err == nil {
				return p, nil
			}
			return f[1], nil
		}
	}
	return "", fmt.Errorf("no module directive")
}

// owner returns the module of the file f: the deepest module folder above
// it.
func owner(mods []module, f string) (module, bool) {
	var best module
	depth := -1
	for _, m := range mods {
		d := 0 // the root's
		if m.dir != "." {
			if !strings.HasPrefix(f, m.dir+"/") {
				continue
			}
			d = strings.Count(m.dir, "/") + 1
		}
		if d > depth {
			best, depth = m, d
		}
	}
	return best, depth >= 0
}

// moduleOf returns the module of the repository whose path is the longest
// prefix of the import path imp.
func moduleOf(mods []module, imp string) (module, bool) {
	var best module
	found := false
	for _, m := range mods {
		if (imp == m.path || strings.HasPrefix(imp, m.path+"/")) && (!found || len(m.path) > len(best.path)) {
			best, found = m, true
		}
	}
	return best, found
}

// internal reports whether rest, an import path within its module (empty,
// or starting with a slash), has an element named internal.
func internal(rest string) bool {
	for _, e := range strings.Split(rest, "/") {
		if e == "internal" {
			return true
		}
	}
	return false
}
