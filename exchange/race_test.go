//go:build race

package exchange_test

const raceEnabled = true
