// Package changelog reads CHANGELOG.md: the release versions, newest first,
// and the text of each section. The file is in the Keep a Changelog style:
//
//	## [Unreleased]
//	...
//	## [0.2.0] - 2027-03-01
//	...
//	## [0.1.0] - 2026-12-01
//
// The newest release entry is the version of every module the repository
// holds. Any other second-level heading is an error, so that a typo cannot
// hide a release.
package changelog

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/semver"
)

// Changelog is a parsed CHANGELOG.md.
type Changelog struct {
	// Unreleased is the text of the "## [Unreleased]" section ("" if there
	// is none).
	Unreleased string
	// Releases are the release entries, newest first.
	Releases []Release
}

// Release is one release entry.
type Release struct {
	Version string    // the Go module version: "v" and the heading's version
	Date    time.Time // the heading's date, midnight UTC
	Text    string    // the section's text, heading excluded
}

var (
	releaseHeading    = regexp.MustCompile(`^## \[(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)\] - (\d{4}-\d{2}-\d{2})$`)
	unreleasedHeading = "## [Unreleased]"
)

// Parse parses the text of a CHANGELOG.md. It returns an error for a
// second-level heading that is neither "## [Unreleased]" nor
// "## [X.Y.Z] - YYYY-MM-DD", for an Unreleased section that is not first,
// and for versions that are not in strictly decreasing order.
func Parse(text string) (*Changelog, error) {
	c := &Changelog{}
	var section *strings.Builder
	var unreleased strings.Builder
	texts := []*strings.Builder{}
	for i, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "## ") {
			if section != nil {
				section.WriteString(line)
				section.WriteByte('\n')
			}
			continue
		}
		line = strings.TrimRight(line, " \t\r")
		if line == unreleasedHeading {
			if section != nil {
				return nil, fmt.Errorf("CHANGELOG.md:%d: the Unreleased section must come before every release", i+1)
			}
			section = &unreleased
			continue
		}
		m := releaseHeading.FindStringSubmatch(line)
		if m == nil {
			return nil, fmt.Errorf("CHANGELOG.md:%d: %q is neither %q nor a release heading \"## [X.Y.Z] - YYYY-MM-DD\"", i+1, line, unreleasedHeading)
		}
		v := "v" + m[1]
		if !semver.IsValid(v) || semver.Canonical(v) != v {
			return nil, fmt.Errorf("CHANGELOG.md:%d: %s is not a semantic version", i+1, m[1])
		}
		date, err := time.Parse(time.DateOnly, m[2])
		if err != nil {
			return nil, fmt.Errorf("CHANGELOG.md:%d: %w", i+1, err)
		}
		if n := len(c.Releases); n > 0 && semver.Compare(v, c.Releases[n-1].Version) >= 0 {
			return nil, fmt.Errorf("CHANGELOG.md:%d: %s follows %s: releases go newest first", i+1, v, c.Releases[n-1].Version)
		}
		c.Releases = append(c.Releases, Release{Version: v, Date: date})
		section = &strings.Builder{}
		texts = append(texts, section)
	}
	c.Unreleased = unreleased.String()
	for i, t := range texts {
		c.Releases[i].Text = t.String()
	}
	return c, nil
}

// Latest returns the newest release entry, or an error if there is none.
func (c *Changelog) Latest() (Release, error) {
	if len(c.Releases) == 0 {
		return Release{}, fmt.Errorf("CHANGELOG.md has no release entry (\"## [X.Y.Z] - YYYY-MM-DD\")")
	}
	return c.Releases[0], nil
}

// Since returns the text of the sections that describe what changed after
// version base: the Unreleased section and every release entry newer than
// base (at the commit that cuts a release, the new entry holds what
// Unreleased held).
func (c *Changelog) Since(base string) string {
	var b strings.Builder
	b.WriteString(c.Unreleased)
	for _, r := range c.Releases {
		if semver.Compare(r.Version, base) <= 0 {
			break
		}
		b.WriteString(r.Text)
	}
	return b.String()
}

var codeSpan = regexp.MustCompile("`([^`\n]+)`")

// Named returns the text of every code span (`...`) in text, with a
// trailing "()" removed, so that `pool.Pool.Close()` names pool.Pool.Close.
func Named(text string) map[string]bool {
	names := map[string]bool{}
	for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
		names[strings.TrimSuffix(strings.TrimSpace(m[1]), "()")] = true
	}
	return names
}
