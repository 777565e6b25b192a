//go:build !race && !poolkit_nolinkname

package pool

import _ "unsafe" // for go:linkname

// procPin and procUnpin are the runtime's, as internal/shard's Enter and
// Exit are (see internal/pin). A keyed pool's hot path calls them itself:
// Keyed's methods are compiled in the program's package that instantiates
// them, where the compiler may not see Enter's body (it sees the inline
// bodies of the packages that package imports, and a program does not
// import internal/shard), and a call to a runtime function declared here
// needs no body to be a plain call.
//
//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()
