package shard_test

import (
	"bytes"
	"fmt"

	"github.com/poolkit/poolkit/exchange"
	"github.com/poolkit/poolkit/shard"
)

// freeList keeps scratch buffers for a hot path: a Local in front, for the
// buffer a goroutine puts back and takes again on the same P (no lock, no
// atomic read-modify-write, no allocation), and a Ring behind it, shared by
// every P, for what the calling P's stack cannot hold. What neither holds
// is left to the garbage collector, so the list never holds more than
// Depth × Procs + the ring's capacity buffers, whatever the load.
type freeList struct {
	local  *shard.Local[*bytes.Buffer]
	shared *exchange.Ring[*bytes.Buffer]
	made   int // buffers made because the list was empty (one goroutine here)
}

func newFreeList() *freeList {
	return &freeList{
		local:  shard.NewLocal[*bytes.Buffer](4, nil),
		shared: exchange.NewRing[*bytes.Buffer](64),
	}
}

func (f *freeList) get() *bytes.Buffer {
	if b, ok := f.local.Pop(); ok {
		return b
	}
	if b, ok := f.shared.Unpark(); ok {
		return b
	}
	f.made++
	return new(bytes.Buffer)
}

// put takes b back; b must not be used afterwards.
func (f *freeList) put(b *bytes.Buffer) {
	if b.Cap() > 64<<10 {
		return // an outsized buffer is not worth keeping
	}
	b.Reset()
	if !f.local.Push(b) {
		f.shared.Park(b) // false: the ring is full too, and b is dropped
	}
}

// held is how many buffers the list holds.
func (f *freeList) held() int { return f.local.Len() + f.shared.Len() }

// render formats one response in a scratch buffer from the list.
func (f *freeList) render(status int, body string) string {
	b := f.get()
	defer f.put(b)
	fmt.Fprintf(b, "HTTP/1.1 %d\r\nContent-Length: %d\r\n\r\n%s", status, len(body), body)
	return fmt.Sprintf("%d bytes", b.Len())
}

func ExampleLocal_freeList() {
	f := newFreeList()
	// Three requests in flight at once: the list is empty, so each gets a
	// new buffer; once they are done, the list holds all three.
	a, b, c := f.get(), f.get(), f.get()
	f.put(a)
	f.put(b)
	f.put(c)
	fmt.Println("made:", f.made, "held:", f.held())

	// From then on, requests reuse the buffers: a buffer comes back empty,
	// whichever one it is.
	fmt.Println(f.render(200, "hello"))
	fmt.Println(f.render(404, "no such page"))
	// Output:
	// made: 3 held: 3
	// 40 bytes
	// 48 bytes
}
