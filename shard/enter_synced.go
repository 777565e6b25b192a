//go:build race || poolkit_nolinkname

package shard

// Enter returns -1, for which Local.Stack has no stack: in this build nothing
// is pinned, and Local.Pop and Local.Push go through the stacks' guards. See
// the default build's Enter.
func Enter() int { return -1 }

// Exit ends what Enter started.
func Exit() {}
