package changelog

import (
	"strings"
	"testing"
)

const sample = `# Changelog

Intro.

## [Unreleased]

- ` + "`pool.Config.Old`" + ` is removed.

## [0.2.0] - 2027-03-01

- ` + "`bytepool.Pool.Gone()`" + ` is removed.

## [0.1.0] - 2026-12-01

- ` + "`shard`" + ` exists.
`

func TestParseReadsReleasesNewestFirst(t *testing.T) {
	c, err := Parse(sample)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Releases) != 2 || c.Releases[0].Version != "v0.2.0" || c.Releases[1].Version != "v0.1.0" {
		t.Fatalf("releases %+v", c.Releases)
	}
	if got := c.Releases[1].Date.Format("2006-01-02T15:04:05Z07:00"); got != "2026-12-01T00:00:00Z" {
		t.Errorf("date %s", got)
	}
	latest, err := c.Latest()
	if err != nil || latest.Version != "v0.2.0" {
		t.Errorf("Latest: %v %v", latest.Version, err)
	}
	if !strings.Contains(c.Unreleased, "pool.Config.Old") || strings.Contains(c.Unreleased, "bytepool") {
		t.Errorf("Unreleased %q", c.Unreleased)
	}
}

func TestSinceTakesUnreleasedAndTheEntriesAfterTheBase(t *testing.T) {
	c, err := Parse(sample)
	if err != nil {
		t.Fatal(err)
	}
	for base, want := range map[string][]string{
		"v0.2.0": {"pool.Config.Old"},
		"v0.1.0": {"pool.Config.Old", "bytepool.Pool.Gone"},
	} {
		named := Named(c.Since(base))
		if len(named) != len(want) {
			t.Errorf("since %s: %v, want %v", base, named, want)
		}
		for _, w := range want {
			if !named[w] {
				t.Errorf("since %s: %v lacks %s", base, named, w)
			}
		}
	}
}

func TestParseRefusesWhatCouldHideARelease(t *testing.T) {
	for name, text := range map[string]string{
		"other heading":       "## [0.1.0] 2026-12-01\n",
		"v in the heading":    "## [v0.1.0] - 2026-12-01\n",
		"no date":             "## [0.1.0]\n",
		"bad date":            "## [0.1.0] - 2026-13-01\n",
		"oldest first":        "## [0.1.0] - 2026-12-01\n## [0.2.0] - 2027-01-01\n",
		"same twice":          "## [0.1.0] - 2026-12-01\n## [0.1.0] - 2026-12-01\n",
		"unreleased too late": "## [0.1.0] - 2026-12-01\n## [Unreleased]\n",
		"not a version":       "## [0.1] - 2026-12-01\n",
	} {
		if _, err := Parse(text); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	c, err := Parse("# Changelog\n## [Unreleased]\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Latest(); err == nil {
		t.Error("Latest without a release: no error")
	}
}
