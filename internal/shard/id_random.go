//go:build poolkit_nolinkname

package shard

import "math/rand/v2"

// randomIDs reports whether stack ids are drawn at random (no P ids).
const randomIDs = true

// procID draws a stack id at random: without go:linkname there is no P id.
func procID(n int) int { return int(rand.Uint32N(uint32(n))) }
