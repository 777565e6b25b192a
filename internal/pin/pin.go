//go:build !poolkit_nolinkname

package pin

import _ "unsafe" // for go:linkname

// Pin pins the calling goroutine to its P and returns the P's id, in
// [0, GOMAXPROCS) at the time of the call. It must be paired with Unpin.
//
// runtime.procPin is one of the runtime symbols that Go keeps reachable
// through linkname for existing users (see its comment in runtime/proc.go).
//
//go:linkname Pin runtime.procPin
func Pin() int

// Unpin undoes Pin.
//
//go:linkname Unpin runtime.procUnpin
func Unpin()
