//go:build race

package ptest

// Race reports whether the race detector is on: tests that run long or
// depend on the pinned build's exclusivity shorten or skip themselves.
const Race = true
