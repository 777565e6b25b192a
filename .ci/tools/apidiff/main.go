// Command apidiff prints the exported-API difference of every module
// between two releases, each a directory that .ci/release wrote (a
// GOPROXY=file://… layout), using golang.org/x/exp/apidiff. It fails if a
// change is incompatible and CHANGELOG.md does not name it.
//
// A change is named when a code span (`…`) in the CHANGELOG's sections
// after the old release (Unreleased, and any entry newer than the old
// release's version) is the changed package's path within the repository
// followed by the changed object, or by the type or field it belongs to:
// `pool.Config.MaxSize`, `pool.Config` (every change to Config: its fields
// and methods), `contrib/poolprom.Options`, `pool.Pool.Acquire` (a method,
// whatever its receiver), or the package alone, `shard`, for a package
// removed. The root module's packages are written without a module prefix
// (`pool`, `bytepool`); a nested module's packages with their folder
// (`contrib/pgxmanager`). A module removed is named by its folder.
//
// Usage:
//
//	apidiff [-changelog FILE] OLD NEW
package main

import (
	"flag"
	"fmt"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/exp/apidiff"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
	"golang.org/x/tools/go/packages"

	"poolkitci/internal/changelog"
)

func main() {
	changelogFile := flag.String("changelog", "CHANGELOG.md", "the new release's CHANGELOG.md")
	workDir := flag.String("work", "", "unpack the releases into DIR/old and DIR/new and keep them (\"\": temporary directories); the same DIR for the same releases lets the build cache serve a second run")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: apidiff [-changelog FILE] [-work DIR] OLD NEW")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 2 {
		flag.Usage()
		os.Exit(2)
	}
	ok, err := run(*changelogFile, *workDir, flag.Arg(0), flag.Arg(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "apidiff:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

func run(changelogFile, workDir, oldDir, newDir string) (bool, error) {
	text, err := os.ReadFile(changelogFile)
	if err != nil {
		return false, err
	}
	cl, err := changelog.Parse(string(text))
	if err != nil {
		return false, err
	}
	old, err := loadRelease(oldDir, workDir, "old")
	if err != nil {
		return false, fmt.Errorf("%s: %w", oldDir, err)
	}
	cur, err := loadRelease(newDir, workDir, "new")
	if err != nil {
		return false, fmt.Errorf("%s: %w", newDir, err)
	}
	fmt.Printf("API of %s (%s) against %s (%s)\n", cur.version, newDir, old.version, oldDir)
	named := changelog.Named(cl.Since(old.version))

	var unnamed []string
	for _, path := range sortedUnion(old.modules, cur.modules) {
		om, nm := old.modules[path], cur.modules[path]
		fmt.Printf("\n%s (packages with an API: %d before, %d now)\n", path, len(om), len(nm))
		switch {
		case nm == nil:
			name := strings.TrimPrefix(strings.TrimPrefix(path, old.root), "/")
			fmt.Printf("  incompatible: module removed%s\n", mark(named[name]))
			if !named[name] {
				unnamed = append(unnamed, fmt.Sprintf("%s: module removed (name `%s`)", path, name))
			}
			continue
		case om == nil:
			fmt.Println("  compatible: module added")
			continue
		}
		changes := moduleChanges(cur.root, om, nm)
		if len(changes) == 0 {
			fmt.Println("  no change")
		}
		for _, c := range changes {
			if c.Compatible {
				fmt.Printf("  compatible: %s\n", c.text)
				continue
			}
			ok := c.namedBy(named)
			fmt.Printf("  incompatible: %s%s\n", c.text, mark(ok))
			if !ok {
				unnamed = append(unnamed, fmt.Sprintf("%s (name `%s`)", c.text, c.names[len(c.names)-1]))
			}
		}
	}
	if len(unnamed) > 0 {
		fmt.Printf("\nFAIL: %d incompatible changes that CHANGELOG.md's Unreleased section does not name:\n", len(unnamed))
		for _, u := range unnamed {
			fmt.Printf("  %s\n", u)
		}
		return false, nil
	}
	fmt.Println("\nok: every incompatible change is named in CHANGELOG.md")
	return true, nil
}

func mark(named bool) string {
	if named {
		return " (named in CHANGELOG.md)"
	}
	return " (NOT NAMED in CHANGELOG.md)"
}

// change is one API change, with the names that would name it in the
// CHANGELOG, shortest first.
type change struct {
	text       string // package path within the repository, then apidiff's message
	Compatible bool
	names      []string
}

func (c change) namedBy(named map[string]bool) bool {
	return slices.ContainsFunc(c.names, func(n string) bool { return named[n] })
}

// moduleChanges compares the exported API of each package of a module.
func moduleChanges(root string, old, cur map[string]*types.Package) []change {
	var out []change
	for _, path := range sortedUnion(old, cur) {
		rel := relPath(root, path)
		op, np := old[path], cur[path]
		switch {
		case np == nil:
			out = append(out, change{text: rel + ": package removed", names: []string{rel}})
		case op == nil:
			out = append(out, change{text: rel + ": package added", Compatible: true})
		default:
			for _, c := range apidiff.Changes(op, np).Changes {
				out = append(out, change{text: rel + "." + c.Message, Compatible: c.Compatible, names: names(rel, c.Message)})
			}
		}
	}
	return out
}

// relPath is a package's path within the repository: its import path less
// the root module's path ("pool", "contrib/poolprom").
func relPath(root, path string) string {
	if path == root {
		return "."
	}
	return strings.TrimPrefix(path, root+"/")
}

var typeParams = regexp.MustCompile(`\[[^\]]*\]`)

// names returns what names a change apidiff reported as msg in the package
// rel: rel followed by each prefix of the object's dotted path, shortest
// first. apidiff writes an object as "Name", "Type.Field",
// "(*Type[T]).Method" or "Type.Method", followed by ": " and what changed,
// sometimes after ", method set of …".
func names(rel, msg string) []string {
	obj, _, _ := strings.Cut(msg, ": ")
	obj, _, _ = strings.Cut(obj, ", ")
	obj = typeParams.ReplaceAllString(obj, "")
	obj = strings.NewReplacer("(", "", ")", "", "*", "").Replace(obj)
	var out []string
	parts := strings.Split(obj, ".")
	for i := range parts {
		out = append(out, rel+"."+strings.Join(parts[:i+1], "."))
	}
	return out
}

// release is the API of every module in a proxy directory.
type release struct {
	version string
	root    string                               // the root module's path
	modules map[string]map[string]*types.Package // module path → package path → API
}

// loadRelease unzips every module of a proxy directory at its newest
// version into one tree, laid out as the repository (a nested module in its
// folder under the root module's), ties them with a go.work, and loads the
// exported API of every package but commands and internal packages. The
// tree is workDir/side, or a temporary directory if workDir is "".
func loadRelease(dir, workDir, side string) (*release, error) {
	mods, err := proxyModules(dir)
	if err != nil {
		return nil, err
	}
	r := &release{modules: map[string]map[string]*types.Package{}}
	for _, m := range mods {
		if r.root == "" || len(m.Path) < len(r.root) {
			r.root = m.Path
		}
		if r.version == "" || semver.Compare(m.Version, r.version) > 0 {
			r.version = m.Version
		}
	}
	var work string
	if workDir == "" {
		if work, err = os.MkdirTemp("", "apidiff-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
	} else {
		work = filepath.Join(workDir, side)
		if err := os.RemoveAll(work); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(work, 0o755); err != nil {
			return nil, err
		}
	}
	var use []string
	for _, m := range mods {
		sub := "."
		if m.Path != r.root {
			var ok bool
			if sub, ok = strings.CutPrefix(m.Path, r.root+"/"); !ok {
				return nil, fmt.Errorf("module %s is not under the root module %s", m.Path, r.root)
			}
		}
		zipFile, err := proxyFile(dir, m, ".zip")
		if err != nil {
			return nil, err
		}
		if err := modzip.Unzip(filepath.Join(work, sub), m, zipFile); err != nil {
			return nil, err
		}
		use = append(use, "./"+filepath.ToSlash(sub))
		r.modules[m.Path] = map[string]*types.Package{}
	}
	// The release's own go.work, if it ships one, is replaced by one that
	// uses exactly the modules the proxy serves.
	os.Remove(filepath.Join(work, "go.work"))
	for _, args := range [][]string{{"work", "init"}, append([]string{"work", "use"}, use...)} {
		cmd := exec.Command("go", args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GOWORK=", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}

	// First only the packages' names and modules (no build), then the API
	// of the ones that have one.
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedModule,
		Dir:  work,
		Env:  append(os.Environ(), "GOWORK="+filepath.Join(work, "go.work"), "GOFLAGS="),
	}
	listed, err := packages.Load(cfg, r.root+"/...")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range listed {
		if p.Name == "main" || isInternal(p.PkgPath) || p.Module == nil {
			continue
		}
		paths = append(paths, p.PkgPath)
	}
	cfg.Mode |= packages.NeedTypes
	loaded, err := packages.Load(cfg, paths...)
	if err != nil {
		return nil, err
	}
	var errs []string
	for _, p := range loaded {
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
		if p.Module != nil && r.modules[p.Module.Path] != nil {
			r.modules[p.Module.Path][p.PkgPath] = p.Types
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("loading the packages:\n%s", strings.Join(errs, "\n"))
	}
	return r, nil
}

func isInternal(path string) bool {
	for e := range strings.SplitSeq(path, "/") {
		if e == "internal" {
			return true
		}
	}
	return false
}

// proxyModules returns every module of a proxy directory at the newest
// version its list names.
func proxyModules(dir string) ([]module.Version, error) {
	var mods []module.Version
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "list" || filepath.Base(filepath.Dir(p)) != "@v" {
			return err
		}
		rel, err := filepath.Rel(dir, filepath.Dir(filepath.Dir(p)))
		if err != nil {
			return err
		}
		path, err := module.UnescapePath(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var newest string
		for _, v := range strings.Fields(string(data)) {
			if newest == "" || semver.Compare(v, newest) > 0 {
				newest = v
			}
		}
		if newest == "" {
			return fmt.Errorf("%s lists no version", p)
		}
		mods = append(mods, module.Version{Path: path, Version: newest})
		return nil
	})
	if err == nil && len(mods) == 0 {
		err = fmt.Errorf("no module (no <module>/@v/list)")
	}
	return mods, err
}

func proxyFile(dir string, m module.Version, ext string) (string, error) {
	p, err := module.EscapePath(m.Path)
	if err != nil {
		return "", err
	}
	v, err := module.EscapeVersion(m.Version)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, filepath.FromSlash(p), "@v", v+ext), nil
}

func sortedUnion[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
