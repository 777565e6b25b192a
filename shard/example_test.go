package shard_test

import (
	"fmt"

	"github.com/poolkit/poolkit/shard"
)

// A Local used as a bounded free list of scratch buffers: a goroutine that
// puts one back and takes one again on the same P gets the same buffer, with
// no lock and no allocation.
func ExampleLocal() {
	free := shard.NewLocal[*[]byte](4, nil)

	get := func() *[]byte {
		if b, ok := free.Pop(); ok {
			return b
		}
		b := make([]byte, 0, 512)
		return &b
	}
	put := func(b *[]byte) {
		*b = (*b)[:0]
		free.Push(b) // false: the stack is full, and b is left to the GC
	}

	b := get()
	*b = append(*b, "hello"...)
	fmt.Println(len(*b), cap(*b))
	put(b)
	fmt.Println(free.Len(), free.Depth())
	// Output:
	// 5 512
	// 1 4
}
