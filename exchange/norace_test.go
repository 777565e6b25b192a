//go:build !race

package exchange_test

const raceEnabled = false
