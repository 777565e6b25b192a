//go:build !race

package pool_test

// See race_on_test.go.
const (
	churnKeys   = 100_000
	keyedStress = 1500
)
