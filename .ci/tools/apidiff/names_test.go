package main

import (
	"slices"
	"testing"
)

func TestNamesOfAChangeGoFromThePackageToTheObject(t *testing.T) {
	for msg, want := range map[string][]string{
		"Config.MaxSize: removed":                  {"pool.Config", "pool.Config.MaxSize"},
		"(*Pool[T]).Acquire: changed from a to b":  {"pool.Pool", "pool.Pool.Acquire"},
		"Lease.Release: removed":                   {"pool.Lease", "pool.Lease.Release"},
		"ErrClosed: removed":                       {"pool.ErrClosed"},
		"Stats, method set of *Stats: removed":     {"pool.Stats"},
		"Manager.Close: changed from func() error": {"pool.Manager", "pool.Manager.Close"},
	} {
		if got := names("pool", msg); !slices.Equal(got, want) {
			t.Errorf("names(%q) = %v, want %v", msg, got, want)
		}
	}
}

func TestRelPathDropsTheRootModulesPath(t *testing.T) {
	root := "github.com/poolkit/poolkit"
	for path, want := range map[string]string{
		root + "/pool":             "pool",
		root + "/contrib/poolprom": "contrib/poolprom",
	} {
		if got := relPath(root, path); got != want {
			t.Errorf("relPath(%s) = %s, want %s", path, got, want)
		}
	}
}
