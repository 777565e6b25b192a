// Command release writes what a Go module proxy serves for every module of
// the repository, at the version of CHANGELOG.md's newest entry, into a
// directory laid out as a GOPROXY=file://… proxy:
//
//	OUT/<module>/@v/list         the versions, one a line
//	OUT/<module>/@v/<v>.info     {"Version", "Time"}: the entry's date
//	OUT/<module>/@v/<v>.mod      the module's go.mod
//	OUT/<module>/@v/<v>.zip      the module zip, made by golang.org/x/mod/zip
//
// with module paths and versions case-encoded as proxies encode them. It reads
// the working tree (or, with -rev, one commit) and needs no git tag. A zip
// holds the module's folder less its nested modules, within the zip format's
// limits. It refuses a module without a LICENSE in its folder, and a go.mod
// that requires another module of the repository at any version but the
// release's.
//
// Usage:
//
//	release [-src DIR] [-rev REV] OUT
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"

	"poolkitci/internal/changelog"
	"poolkitci/internal/tree"
)

func main() {
	src := flag.String("src", ".", "the repository's root")
	rev := flag.String("rev", "", "a git revision to release instead of the working tree")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: release [-src DIR] [-rev REV] OUT")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*src, *rev, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(src, rev, out string) error {
	var t *tree.Tree
	var err error
	if rev != "" {
		t, err = tree.Commit(src, rev)
	} else {
		t, err = tree.WorkingTree(src)
	}
	if err != nil {
		return err
	}
	text, err := t.ReadFile("CHANGELOG.md")
	if err != nil {
		return err
	}
	cl, err := changelog.Parse(string(text))
	if err != nil {
		return err
	}
	rel, err := cl.Latest()
	if err != nil {
		return err
	}
	mods, err := t.Modules()
	if err != nil {
		return err
	}
	if err := check(t, mods, rel.Version); err != nil {
		return err
	}
	for _, m := range mods {
		if err := write(t, m, rel, out); err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
	}
	fmt.Printf("wrote %d modules at %s (CHANGELOG.md, %s) to %s\n", len(mods), rel.Version, rel.Date.Format("2006-01-02"), out)
	return nil
}

// check returns an error for every module without a LICENSE of its own,
// and for every requirement of a module of the repository at a version that
// is not the release's: the modules are released together, and a consumer
// resolves these requirements (not the local replaces) from a proxy.
func check(t *tree.Tree, mods []tree.Module, version string) error {
	ours := map[string]bool{}
	for _, m := range mods {
		ours[m.Path] = true
	}
	var errs []error
	for _, m := range mods {
		goMod := filepath.ToSlash(filepath.Join(m.Dir, "go.mod"))
		if _, err := t.ReadFile(filepath.ToSlash(filepath.Join(m.Dir, "LICENSE"))); err != nil {
			errs = append(errs, fmt.Errorf("%s has no LICENSE in its folder (a module's zip holds only its own folder)", m.Path))
		}
		for _, r := range m.Mod.Require {
			if ours[r.Mod.Path] && r.Mod.Version != version {
				errs = append(errs, fmt.Errorf("%s requires %s %s; the release is %s (CHANGELOG.md): require every module of the repository at the release's version", goMod, r.Mod.Path, r.Mod.Version, version))
			}
		}
	}
	return errors.Join(errs...)
}

func write(t *tree.Tree, m tree.Module, rel changelog.Release, out string) error {
	mv := module.Version{Path: m.Path, Version: rel.Version}
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVersion, err := module.EscapeVersion(rel.Version)
	if err != nil {
		return err
	}
	dir := filepath.Join(out, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, escVersion)

	files := t.Files(m)
	cf, err := modzip.CheckFiles(files)
	if err != nil {
		return fmt.Errorf("the module's files break the zip format's rules: %w", err)
	}
	var zbuf bytes.Buffer
	if err := modzip.Create(&zbuf, mv, files); err != nil {
		return err
	}
	if err := os.WriteFile(base+".zip", zbuf.Bytes(), 0o644); err != nil {
		return err
	}
	if _, err := modzip.CheckZip(mv, base+".zip"); err != nil {
		return err
	}
	if err := os.WriteFile(base+".mod", m.Raw, 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    string
	}{rel.Version, rel.Date.UTC().Format("2006-01-02T15:04:05Z")})
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".info", append(info, '\n'), 0o644); err != nil {
		return err
	}
	if err := addToList(filepath.Join(dir, "list"), rel.Version); err != nil {
		return err
	}
	folder := m.Dir
	if folder == "" {
		folder = "."
	}
	fmt.Printf("%s %s (%s): %d files, %d bytes zipped%s\n", m.Path, rel.Version, folder, len(cf.Valid), zbuf.Len(), leftOut(cf.Omitted))
	return nil
}

// leftOut says how many files the zip left out, and why ("file is in
// another module": a nested module's).
func leftOut(omitted modzip.FileErrorList) string {
	if len(omitted) == 0 {
		return ""
	}
	why := map[string]int{}
	for _, fe := range omitted {
		why[fe.Err.Error()]++
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(why)) {
		parts = append(parts, fmt.Sprintf("%d: %s", why[k], k))
	}
	return "; left out " + strings.Join(parts, ", ")
}

// addToList adds v to the proxy's list of versions, keeping the versions
// already listed there.
func addToList(list, v string) error {
	versions := []string{v}
	if old, err := os.ReadFile(list); err == nil {
		for l := range strings.Lines(string(old)) {
			if l = strings.TrimSpace(l); l != "" && l != v {
				versions = append(versions, l)
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	slices.SortFunc(versions, semver.Compare)
	return os.WriteFile(list, []byte(strings.Join(versions, "\n")+"\n"), 0o644)
}
