//go:build !linux

package bytepool

// freeMapped does nothing where there is no Mmap allocator.
func freeMapped([]byte) {}
