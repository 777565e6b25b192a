//go:build !race

package ptest

// Race reports whether the race detector is on (see race.go).
const Race = false
