package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
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

const changelogText = "# Changelog\n\n## [Unreleased]\n\n## [1.2.0] - 2026-12-01\n\nText.\n"

func TestReleaseWritesWhatAProxyServes(t *testing.T) {
	src, out := t.TempDir(), t.TempDir()
	writeFiles(t, src, map[string]string{
		"CHANGELOG.md":       changelogText,
		"LICENSE":            "licence\n",
		"go.mod":             "module example.com/Upper\n\ngo 1.26\n",
		"a.go":               "package upper\n",
		"sub/LICENSE":        "licence\n",
		"sub/go.mod":         "module example.com/Upper/sub\n\ngo 1.26\n\nrequire example.com/Upper v1.2.0\n",
		"sub/s.go":           "package sub\n",
		"sub/testdata/x.txt": "data\n",
	})
	if err := run(src, "", out); err != nil {
		t.Fatal(err)
	}
	// A proxy escapes upper-case letters: example.com/!upper.
	for _, m := range []module.Version{{Path: "example.com/Upper", Version: "v1.2.0"}, {Path: "example.com/Upper/sub", Version: "v1.2.0"}} {
		esc, _ := module.EscapePath(m.Path)
		base := filepath.Join(out, filepath.FromSlash(esc), "@v")
		list, err := os.ReadFile(filepath.Join(base, "list"))
		if err != nil || string(list) != "v1.2.0\n" {
			t.Errorf("%s list: %q %v", m.Path, list, err)
		}
		info, err := os.ReadFile(filepath.Join(base, "v1.2.0.info"))
		if err != nil || !strings.Contains(string(info), `"Time":"2026-12-01T00:00:00Z"`) {
			t.Errorf("%s info: %s %v", m.Path, info, err)
		}
		cf, err := modzip.CheckZip(m, filepath.Join(base, "v1.2.0.zip"))
		if err != nil {
			t.Fatalf("%s zip: %v", m.Path, err)
		}
		prefix := m.Path + "@" + m.Version + "/"
		var files []string
		for _, v := range cf.Valid {
			files = append(files, strings.TrimPrefix(v, prefix))
		}
		joined := strings.Join(files, " ")
		if m.Path == "example.com/Upper" && (strings.Contains(joined, "sub/") || !strings.Contains(joined, "LICENSE")) {
			t.Errorf("root zip holds %s: the nested module's files must be left out, the LICENSE in", joined)
		}
		if m.Path == "example.com/Upper/sub" && joined != "LICENSE go.mod s.go testdata/x.txt" {
			t.Errorf("sub zip holds %s", joined)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "example.com", "!upper", "@v", "v1.2.0.mod")); err != nil {
		t.Error(err)
	}

	// A second release into the same directory keeps the first in the list.
	writeFiles(t, src, map[string]string{
		"CHANGELOG.md": "## [1.10.0] - 2027-01-01\n\n" + strings.TrimPrefix(changelogText, "# Changelog\n\n## [Unreleased]\n\n"),
		"sub/go.mod":   "module example.com/Upper/sub\n\ngo 1.26\n\nrequire example.com/Upper v1.10.0\n",
	})
	if err := run(src, "", out); err != nil {
		t.Fatal(err)
	}
	list, _ := os.ReadFile(filepath.Join(out, "example.com", "!upper", "@v", "list"))
	if string(list) != "v1.2.0\nv1.10.0\n" {
		t.Errorf("list after two releases: %q", list)
	}
}

func TestReleaseRefusesAModuleThatIsNotReleasedTogether(t *testing.T) {
	src := t.TempDir()
	writeFiles(t, src, map[string]string{
		"CHANGELOG.md": changelogText,
		"LICENSE":      "licence\n",
		"go.mod":       "module example.com/r\n\ngo 1.26\n",
		"sub/go.mod":   "module example.com/r/sub\n\ngo 1.26\n\nrequire example.com/r v0.0.0-00010101000000-000000000000\n",
		"sub/s.go":     "package sub\n",
	})
	err := run(src, "", t.TempDir())
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"sub/go.mod requires example.com/r v0.0.0-00010101000000-000000000000; the release is v1.2.0",
		"example.com/r/sub has no LICENSE in its folder",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
