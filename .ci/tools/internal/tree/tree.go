// Package tree lists the files of the repository, as a working tree or as
// one commit, and finds the modules it publishes.
package tree

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	modzip "golang.org/x/mod/zip"
)

// Tree is the files of a repository at one state. Paths are slash-separated
// and relative to the repository's root.
type Tree struct {
	files map[string]modzip.File
	paths []string // sorted
}

// WorkingTree returns the files of the working tree at dir. In a git work
// tree these are the files git tracks or would track (tracked and untracked
// files, less those .gitignore ignores), as they are on disk; anywhere else,
// every file under dir but version-control metadata.
func WorkingTree(dir string) (*Tree, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	var paths []string
	if top, err := git(dir, "rev-parse", "--show-toplevel"); err == nil && sameDir(strings.TrimSpace(string(top)), dir) {
		out, err := git(dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
		if err != nil {
			return nil, err
		}
		for p := range strings.SplitSeq(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			if p != "" {
				paths = append(paths, p)
			}
		}
	} else {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch d.Name() {
			case ".git", ".hg", ".svn", ".bzr":
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil // a worktree's .git file
			}
			if !d.IsDir() {
				rel, _ := filepath.Rel(dir, p)
				paths = append(paths, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	t := &Tree{files: map[string]modzip.File{}}
	for _, p := range paths {
		fp := filepath.Join(dir, filepath.FromSlash(p))
		info, err := os.Lstat(fp)
		if errors.Is(err, fs.ErrNotExist) {
			continue // tracked, deleted in the working tree
		}
		if err != nil {
			return nil, err
		}
		t.add(p, diskFile{path: p, file: fp, info: info})
	}
	slices.Sort(t.paths)
	return t, nil
}

// Commit returns the files of commit rev of the git repository at dir, as
// git archive writes them (what the go command's module fetcher reads at a
// tag).
func Commit(dir, rev string) (*Tree, error) {
	out, err := git(dir, "-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", rev)
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(bytes.NewReader(out), int64(len(out)))
	if err != nil {
		return nil, fmt.Errorf("git archive %s: %w", rev, err)
	}
	t := &Tree{files: map[string]modzip.File{}}
	for _, f := range zr.File {
		if strings.HasSuffix(f.Name, "/") {
			continue
		}
		t.add(f.Name, archivedFile{path: f.Name, f: f})
	}
	slices.Sort(t.paths)
	return t, nil
}

func (t *Tree) add(p string, f modzip.File) {
	t.files[p] = f
	t.paths = append(t.paths, p)
}

// ReadFile returns the content of file p.
func (t *Tree) ReadFile(p string) ([]byte, error) {
	f, ok := t.files[p]
	if !ok {
		return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
	}
	r, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// Module is one module the tree publishes.
type Module struct {
	Path string        // the module path
	Dir  string        // its folder, relative to the root; "" for the root module
	Mod  *modfile.File // its go.mod
	Raw  []byte        // its go.mod's content, what a proxy serves as .mod
}

// Files returns the files under the module's folder, with paths relative
// to it: the input of modzip.Create, which leaves out nested modules.
func (t *Tree) Files(m Module) []modzip.File {
	var files []modzip.File
	for _, p := range t.paths {
		rel := p
		if m.Dir != "" {
			var ok bool
			if rel, ok = strings.CutPrefix(p, m.Dir+"/"); !ok {
				continue
			}
		}
		files = append(files, renamed{File: t.files[p], path: rel})
	}
	return files
}

// Modules returns the modules the tree publishes, the root module first:
// the root's, and every nested module whose path is the root's path
// followed by its folder. A go.mod under a folder whose name starts with
// "." or "_", or is "testdata" (which the go command never reads as part
// of a module), is not published (such as the CI's own tools); any other
// go.mod whose path does not match its folder is an error, since no proxy
// could serve it from this repository.
func (t *Tree) Modules() ([]Module, error) {
	var mods []Module
	var errs []error
	for _, p := range t.paths {
		if path.Base(p) != "go.mod" {
			continue
		}
		dir := path.Dir(p)
		if dir == "." {
			dir = ""
		}
		if ignoredDir(dir) {
			continue
		}
		raw, err := t.ReadFile(p)
		if err != nil {
			return nil, err
		}
		mf, err := modfile.Parse(p, raw, nil)
		if err != nil {
			return nil, err
		}
		if mf.Module == nil {
			errs = append(errs, fmt.Errorf("%s: no module line", p))
			continue
		}
		mods = append(mods, Module{Path: mf.Module.Mod.Path, Dir: dir, Mod: mf, Raw: raw})
	}
	i := slices.IndexFunc(mods, func(m Module) bool { return m.Dir == "" })
	if i < 0 {
		return nil, errors.New("no go.mod at the repository's root")
	}
	mods[0], mods[i] = mods[i], mods[0]
	slices.SortFunc(mods[1:], func(a, b Module) int { return strings.Compare(a.Path, b.Path) })
	root := mods[0].Path
	for _, m := range mods[1:] {
		if want := root + "/" + m.Dir; m.Path != want {
			errs = append(errs, fmt.Errorf("%s/go.mod: module %s; a nested module's path must be %s", m.Dir, m.Path, want))
		}
	}
	return mods, errors.Join(errs...)
}

func ignoredDir(dir string) bool {
	for e := range strings.SplitSeq(dir, "/") {
		if strings.HasPrefix(e, ".") || strings.HasPrefix(e, "_") || e == "testdata" {
			return true
		}
	}
	return false
}

func git(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func sameDir(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

type diskFile struct {
	path, file string
	info       fs.FileInfo
}

func (f diskFile) Path() string                 { return f.path }
func (f diskFile) Lstat() (fs.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.file) }

type archivedFile struct {
	path string
	f    *zip.File
}

func (f archivedFile) Path() string                 { return f.path }
func (f archivedFile) Lstat() (fs.FileInfo, error)  { return f.f.FileInfo(), nil }
func (f archivedFile) Open() (io.ReadCloser, error) { return f.f.Open() }

type renamed struct {
	modzip.File
	path string
}

func (f renamed) Path() string { return f.path }
