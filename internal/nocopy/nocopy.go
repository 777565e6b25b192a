// Package nocopy holds NoCopy, which makes go vet report copies of the struct
// that holds it.
package nocopy

// NoCopy may be embedded in structs that must not be copied after first use:
// go vet's copylocks check reports copies of a struct that holds one (it
// takes the Lock and Unlock methods for a lock's). It takes no space.
type NoCopy struct{}

// Lock is a no-op, for go vet.
func (*NoCopy) Lock() {}

// Unlock is a no-op, for go vet.
func (*NoCopy) Unlock() {}
