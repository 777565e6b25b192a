//go:build !race && !poolkit_nolinkname

package shard

import "github.com/poolkit/poolkit/internal/pin"

// Enter pins the calling goroutine to its P, as sync.Pool does, and returns
// the P's id, for Local.Stack. Exit must follow, and the code in between is
// leaf code: no blocking, no locks, no channel operations, no allocation, no
// panic (a panic while pinned is a fatal error that recover cannot catch).
// One Enter may serve several Locals.
//
// In the synchronised builds (race, poolkit_nolinkname) Enter does not pin
// and returns -1, for which Local.Stack has no stack.
func Enter() int { return pin.Pin() }

// Exit ends what Enter started.
func Exit() { pin.Unpin() }
