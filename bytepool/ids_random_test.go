//go:build poolkit_nolinkname

package bytepool_test

// randomIDs reports a build without P ids (shard draws stacks at random).
const randomIDs = true
