//go:build race || poolkit_nolinkname

package pool

// procPin and procUnpin do nothing where internal/shard's Enter does not pin
// (the synchronised builds): -1 is no P, and a keyed pool's Acquire asks its
// table.
func procPin() int { return -1 }
func procUnpin()   {}
