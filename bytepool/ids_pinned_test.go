//go:build !poolkit_nolinkname

package bytepool_test

import "github.com/poolkit/poolkit/internal/pin"

// randomIDs reports a build without P ids (shard draws stacks at random).
const randomIDs = false

// currentP returns the id of the P the caller runs on, in every build with
// P ids, the race detector's included; the caller may be moved right after.
func currentP() int {
	pid := pin.Pin()
	pin.Unpin()
	return pid
}
