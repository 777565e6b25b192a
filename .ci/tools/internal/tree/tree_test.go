package tree

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		fp := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(fp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestModulesArePublishedOnlyAtTheirFolderPath(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"go.mod":                  "module example.com/r\n",
		"a.go":                    "package r\n",
		"contrib/x/go.mod":        "module example.com/r/contrib/x\n",
		"contrib/x/x.go":          "package x\n",
		".ci/tools/go.mod":        "module tools\n",
		"p/testdata/m/go.mod":     "module m\n",
		".git/config":             "not a file of the tree\n",
		"contrib/x/sub/nested.go": "package sub\n",
	})
	tr, err := WorkingTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	mods, err := tr.Modules()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range mods {
		got = append(got, m.Path+"@"+m.Dir)
	}
	if want := []string{"example.com/r@", "example.com/r/contrib/x@contrib/x"}; !slices.Equal(got, want) {
		t.Fatalf("modules %v, want %v", got, want)
	}
	var files []string
	for _, f := range tr.Files(mods[1]) {
		files = append(files, f.Path())
	}
	if want := []string{"go.mod", "sub/nested.go", "x.go"}; !slices.Equal(files, want) {
		t.Errorf("files of contrib/x %v, want %v", files, want)
	}
	if _, err := tr.ReadFile(".git/config"); err == nil {
		t.Error("the tree holds .git")
	}

	write(t, dir, map[string]string{"other/go.mod": "module example.com/elsewhere\n"})
	tr, err = WorkingTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Modules(); err == nil || !strings.Contains(err.Error(), "must be example.com/r/other") {
		t.Errorf("a nested module at a path that is not its folder's: %v", err)
	}
}
