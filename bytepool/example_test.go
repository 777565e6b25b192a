package bytepool_test

import (
	"fmt"
	"strings"

	"github.com/poolkit/poolkit/bytepool"
)

func Example() {
	b := bytepool.Get(1500) // len 1500, cap 2048; contents unspecified
	n := copy(b, "frame payload")
	fmt.Println(len(b), cap(b), string(b[:n]))
	bytepool.Put(b) // b must not be used afterwards
	// Output: 1500 1536 frame payload
}

func ExampleNew() {
	p, err := bytepool.New(bytepool.Config{
		MinSize:     4 << 10, // 4 KiB
		MaxSize:     4 << 20, // 4 MiB
		MaxRetained: 64 << 20,
		ZeroOnPut:   true, // buffers may hold secrets
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	b := p.Get(100)
	fmt.Println(len(b), cap(b))
	p.Put(b)
	big := p.Get(5 << 20) // above MaxSize: plain allocation, not pooled
	fmt.Println(len(big) == cap(big))
	p.Trim()
	fmt.Println(p.Stats().Retained)
	// Output:
	// 100 4096
	// true
	// 0
}

func ExampleNew_invalid() {
	_, err := bytepool.New(bytepool.Config{MinSize: 1000})
	fmt.Println(err)
	// Output: bytepool: Config.MinSize 1000 is not a power of two >= 8
}

func ExampleBuffer() {
	var b bytepool.Buffer // draws from bytepool.Default()
	b.WriteString("hello, ")
	b.ReadFrom(strings.NewReader("world"))
	b.WriteByte('!')
	fmt.Println(b.String(), b.Len())
	b.Reset() // empty, keeping the storage
	fmt.Println(b.Len())
	b.Free() // storage goes back to the pool; b must not be used afterwards
	// Output:
	// hello, world! 13
	// 0
}

func ExamplePool_GetZeroed() {
	p, _ := bytepool.New(bytepool.Config{})
	b := p.Get(64)
	copy(b, "secret")
	p.Put(b)
	z := p.GetZeroed(64)
	fmt.Println(z[:6])
	p.Put(z)
	// Output: [0 0 0 0 0 0]
}
