//go:build !race

package bytepool_test

const raceEnabled = false
