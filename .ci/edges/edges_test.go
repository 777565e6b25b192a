package main

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// repo is a repository of three modules: the root (example.com/r), a
// nested one (contrib/x) and one nested in that (contrib/x/deep), each with
// an internal package, plus what the check does not read.
func repo(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"go.mod":                          {Data: []byte("module example.com/r\n\ngo 1.26\n")},
		"internal/h/h.go":                 {Data: []byte("package h\n")},
		"pool/pool.go":                    {Data: []byte("package pool\n\nimport _ \"example.com/r/internal/h\"\n")},
		"contrib/x/go.mod":                {Data: []byte("// A nested module.\nmodule \"example.com/r/contrib/x\"\n")},
		"contrib/x/internal/fold/fold.go": {Data: []byte("package fold\n")},
		"contrib/x/x.go":                  {Data: []byte("package x\n\nimport (\n\t\"fmt\"\n\n\t_ \"example.com/r/contrib/x/internal/fold\"\n\t_ \"example.com/r/pool\"\n)\n\nvar _ = fmt.Sprint\n")},
		"contrib/x/x_test.go":             {Data: []byte("package x\n\nimport _ \"example.com/r/internal/h\"\n")},
		"contrib/x/deep/go.mod":           {Data: []byte("module example.com/r/contrib/x/deep\n")},
		"contrib/x/deep/internal/d/d.go":  {Data: []byte("package d\n")},
		"contrib/x/deep/deep.go":          {Data: []byte("package deep\n\nimport _ \"example.com/r/contrib/x/deep/internal/d\"\n")},
		"contrib/x/testdata/t.go":         {Data: []byte("package t\n\nimport _ \"example.com/r/internal/h\"\n")},
		"contrib/x/_old/o.go":             {Data: []byte("package o\n\nimport _ \"example.com/r/internal/h\"\n")},
		".ci/tools/go.mod":                {Data: []byte("module example.com/r/ci\n")},
		".ci/tools/t.go":                  {Data: []byte("package t\n\nimport _ \"example.com/r/internal/h\"\n")},
	}
	for name, body := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(body)}
	}
	return fsys
}

func TestModulesImportingOnlyTheirOwnInternalPackagesPass(t *testing.T) {
	problems, files, err := check(repo(nil))
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Equal(t, 6, files, "the files of testdata, _old and .ci are not read")
}

func TestAnImportOfAnotherModulesInternalPackageIsNamed(t *testing.T) {
	problems, _, err := check(repo(map[string]string{
		// A nested module's code importing the root's internal package.
		"contrib/x/keyed.go": "package x\n\nimport (\n\t\"fmt\"\n\t_ \"example.com/r/internal/h\"\n)\n\nvar _ = fmt.Sprint\n",
		// The root's code importing a nested module's internal package.
		"pool/fold.go": "//go:build ignore\n\npackage pool\n\nimport _ \"example.com/r/contrib/x/internal/fold\"\n",
		// A module importing the internal package of the module nested in
		// it: the longest module path is the importee's module.
		"contrib/x/d.go": "package x\n\nimport _ \"example.com/r/contrib/x/deep/internal/d\"\n",
		// An internal package at the end of the path, below a folder.
		"contrib/x/deep/i.go": "package deep\n\nimport _ \"example.com/r/contrib/x/internal\"\n",
	}))
	require.NoError(t, err)
	require.Equal(t, []string{
		"contrib/x/d.go:3: imports example.com/r/contrib/x/deep/internal/d, internal to the module example.com/r/contrib/x/deep (contrib/x/deep)",
		"contrib/x/deep/i.go:3: imports example.com/r/contrib/x/internal, internal to the module example.com/r/contrib/x (contrib/x)",
		"contrib/x/keyed.go:5: imports example.com/r/internal/h, internal to the module example.com/r (.)",
		"pool/fold.go:5: imports example.com/r/contrib/x/internal/fold, internal to the module example.com/r/contrib/x (contrib/x)",
	}, problems)
}

func TestAFileThatDoesNotParseIsAnError(t *testing.T) {
	_, _, err := check(repo(map[string]string{"contrib/x/bad.go": "package x\n\nimport (\n"}))
	require.Error(t, err)
}
