package shard

// RandomIDs reports whether this build draws stack ids at random
// (poolkit_nolinkname).
const RandomIDs = randomIDs
