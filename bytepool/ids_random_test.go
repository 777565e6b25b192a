//go:build poolkit_nolinkname

package bytepool_test

// randomIDs reports a build without P ids (shard draws stacks at random).
const randomIDs = true

// currentP returns -1: this build knows no P ids, and its Gets look at
// every P's stack, so a goroutine that moves strands nothing.
func currentP() int { return -1 }
