//go:build race && !poolkit_nolinkname

package shard

import "github.com/poolkit/poolkit/internal/pin"

// randomIDs reports whether stack ids are drawn at random (no P ids).
const randomIDs = false

// procID returns the caller's current P id. The caller is not pinned after it
// returns, so the id may be stale by the time it is used; the stack's guard
// keeps that safe.
func procID(int) int {
	pid := pin.Pin()
	pin.Unpin()
	return pid
}
