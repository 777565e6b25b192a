//go:build linux

package bytepool_test

import "github.com/poolkit/poolkit/bytepool"

func platformAllocators() []allocator {
	return []allocator{{name: "Mmap", make: func() bytepool.Allocator { return bytepool.NewMmap(false) }}}
}
