package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// gitRepo makes a repository with one commit and returns it and the
// commit.
func gitRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"},
	} {
		require.NoError(t, exec.Command("git", append([]string{"-C", dir}, args...)...).Run())
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644))
	require.NoError(t, exec.Command("git", "-C", dir, "add", "a.txt").Run())
	require.NoError(t, exec.Command("git", "-C", dir, "commit", "-q", "-m", "a").Run())
	head, err := git(dir, "rev-parse", "HEAD")
	require.NoError(t, err)
	return dir, head
}

func TestPublishRefusesATreeWithUncommittedChanges(t *testing.T) {
	dir, head := gitRepo(t)
	got, err := cleanHead(dir)
	require.NoError(t, err)
	assert.Equal(t, head, got)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("changed\n"), 0o644))
	_, err = cleanHead(dir)
	require.ErrorContains(t, err, "uncommitted changes")
	_, err = cleanHead(t.TempDir())
	require.ErrorContains(t, err, "no commit to measure")
}

func TestPublishDryRunPrintsThePlanAndAnEstimate(t *testing.T) {
	var stderr bytes.Buffer
	work := t.TempDir()
	require.Equal(t, exitOK, run([]string{"publish", "-dry-run", "-work", work}, new(bytes.Buffer), &stderr))
	out := stderr.String()
	for _, want := range []string{"poolbench -mode=all -rounds=10", "poolbench -mode=e2e -rounds=10", "poolbench -mode=faults",
		"poolbench -mode=keyed", "poolbench icount", "in all, on a quiet machine"} {
		assert.Contains(t, out, want)
	}
	entries, err := os.ReadDir(work)
	require.NoError(t, err)
	assert.Empty(t, entries, "a dry run measures nothing")
	assert.Equal(t, exitUsage, run([]string{"publish", "stray"}, new(bytes.Buffer), new(bytes.Buffer)))
}

// TestPublishKeepsThePartsOfThisCommitAndCombinesThemAsOneRun checks the
// resumption and the combination on parts made from the fixtures.
func TestPublishKeepsThePartsOfThisCommitAndCombinesThemAsOneRun(t *testing.T) {
	work := t.TempDir()
	base, err := readResults(fixture)
	require.NoError(t, err)
	e2ePart, err := readResults("../../internal/report/testdata/e2e.json")
	require.NoError(t, err)
	faultsPart, err := readResults("../../internal/report/testdata/faults.json")
	require.NoError(t, err)
	keyedPart, err := readResults("../../internal/report/testdata/keyed.json")
	require.NoError(t, err)
	head := base.Machine.Commit
	icountPart := results.File{Schema: results.Schema, Machine: base.Machine,
		Icount: &results.Icount{Command: "poolbench icount", Machine: base.Machine}}
	for _, p := range []*results.File{&e2ePart, &faultsPart, &keyedPart} {
		p.Machine = base.Machine
	}
	steps := publishSteps()
	parts := []results.File{base, e2ePart, faultsPart, keyedPart, icountPart}
	for i, s := range steps {
		require.NoError(t, writeJSONFile(partPath(work, s.name), parts[i]))
		assert.True(t, kept(work, s.name, head), s.name)
		assert.False(t, kept(work, s.name, "another"), "%s: a part of another commit is measured again", s.name)
	}
	f, err := combine(work, steps)
	require.NoError(t, err)
	assert.Equal(t, "poolbench publish", f.Command)
	assert.Len(t, f.Cases, len(base.Cases)+len(e2ePart.Cases))
	assert.NotNil(t, f.Faults)
	assert.NotNil(t, f.Keyed)
	assert.Equal(t, "all,e2e,faults,keyed", f.Settings.Mode)
	assert.NotNil(t, f.Icount)
	assert.NotNil(t, f.Settings.E2E)
	assert.True(t, f.OneCommit(), "the combination is one run at one commit")

	dirty := base
	dirty.Machine.Dirty = true
	require.NoError(t, writeJSONFile(partPath(work, "cases"), dirty))
	assert.False(t, kept(work, "cases", head), "a part measured on a dirty tree is measured again")
}
