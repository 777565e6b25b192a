//go:build !poolkit_debug

package bytepool

// debugTracking reports whether the double-Put table is compiled in.
const debugTracking = false

func debugOnPut([]byte)  {}
func debugOnGet([]byte)  {}
func debugForget([]byte) {}
