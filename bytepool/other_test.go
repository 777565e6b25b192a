//go:build !linux

package bytepool_test

func platformAllocators() []allocator { return nil }
