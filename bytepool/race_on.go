//go:build race

package bytepool

// raceEnabled reports a build with the race detector (see Pool.Put).
const raceEnabled = true
