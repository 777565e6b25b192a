//go:build !poolkit_debug

package bytepool

// debugTracking reports whether the double-Put table is compiled in.
const debugTracking = false

func debugOnPut([]byte)  {}
func debugOnGet([]byte)  {}
func debugForget([]byte) {}

// recycleHeaders says whether Buffer.Free gives a NewBuffer header back to
// its pool's cache (see the poolkit_debug build).
const recycleHeaders = true

// bufferState is empty outside the poolkit_debug build: its checks compile
// away.
type bufferState struct{}

func (*bufferState) live()  {}
func (*bufferState) free()  {}
func (*bufferState) reuse() {}
