package contenders

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/valyala/bytebufferpool"

	"github.com/poolkit/poolkit/bytepool"
)

// Growable is a source of growable buffers under test, used as a request
// uses a bytes.Buffer whose final size it does not know: take a buffer,
// write to it a chunk at a time, write the content out, give the buffer
// back.
type Growable interface {
	// Use takes a buffer, writes n bytes to it from chunk, len(chunk)
	// bytes at a time (the last write shorter), writes the content to
	// io.Discard, gives the buffer back, and returns the capacity the
	// buffer had before it was given back.
	Use(chunk []byte, n int) (capacity int)
	// Close releases what the source keeps.
	Close()
}

// GrowableContender names a source of growable buffers and makes instances
// of it.
type GrowableContender struct {
	Name string
	New  func() (Growable, error)
}

// GrowableContenders returns the sources of growable buffers: poolkit's
// bytepool.Buffer from a pool of its own, made without a size hint (the
// pool learns the size); a bytes.Buffer made for each use, without a pool;
// a sync.Pool of *bytes.Buffer, the idiom; and valyala/bytebufferpool,
// whose pool calibrates the size of the buffers it makes and keeps.
func GrowableContenders() []GrowableContender {
	return []GrowableContender{
		{Name: "poolkit", New: newPoolkitGrowable},
		{Name: "bytesbuffer", New: func() (Growable, error) { return bytesBufferGrowable{}, nil }},
		{Name: "syncpool", New: func() (Growable, error) { return newSyncPoolGrowable(), nil }},
		{Name: "bytebufferpool", New: func() (Growable, error) { return &byteBufferPoolGrowable{}, nil }},
	}
}

// GrowableByName returns the contender called name.
func GrowableByName(name string) (GrowableContender, error) {
	for _, c := range GrowableContenders() {
		if c.Name == name {
			return c, nil
		}
	}
	return GrowableContender{}, fmt.Errorf("contenders: no growable buffer %q", name)
}

// fill writes n bytes from chunk to w, len(chunk) at a time.
func fill(w io.Writer, chunk []byte, n int) {
	for ; n > len(chunk); n -= len(chunk) {
		_, _ = w.Write(chunk)
	}
	_, _ = w.Write(chunk[:n])
}

type poolkitGrowable struct{ p *bytepool.Pool }

func newPoolkitGrowable() (Growable, error) {
	p, err := bytepool.New(bytepool.Config{})
	if err != nil {
		return nil, err
	}
	return poolkitGrowable{p}, nil
}

func (g poolkitGrowable) Use(chunk []byte, n int) int {
	b := g.p.NewBuffer(0)
	fill(b, chunk, n)
	c := b.Cap()
	_, _ = b.WriteTo(io.Discard)
	b.Free()
	return c
}

func (g poolkitGrowable) Close() { g.p.Trim() }

// ReadStats reads the pool's statistics (see StatsReader).
func (g poolkitGrowable) ReadStats() { _ = g.p.Stats() }

type bytesBufferGrowable struct{}

func (bytesBufferGrowable) Use(chunk []byte, n int) int {
	b := new(bytes.Buffer)
	fill(b, chunk, n)
	c := b.Cap()
	_, _ = b.WriteTo(io.Discard)
	return c
}

func (bytesBufferGrowable) Close() {}

type syncPoolGrowable struct{ p *sync.Pool }

func newSyncPoolGrowable() syncPoolGrowable {
	return syncPoolGrowable{&sync.Pool{New: func() any { return new(bytes.Buffer) }}}
}

func (g syncPoolGrowable) Use(chunk []byte, n int) int {
	b := g.p.Get().(*bytes.Buffer)
	b.Reset()
	fill(b, chunk, n)
	c := b.Cap()
	_, _ = b.WriteTo(io.Discard)
	g.p.Put(b)
	return c
}

func (syncPoolGrowable) Close() {}

// byteBufferPoolGrowable is valyala/bytebufferpool's Pool: Put calibrates
// the size of the buffers Get makes and the largest it keeps.
type byteBufferPoolGrowable struct{ p bytebufferpool.Pool }

func (g *byteBufferPoolGrowable) Use(chunk []byte, n int) int {
	b := g.p.Get()
	fill(b, chunk, n)
	c := cap(b.B)
	_, _ = b.WriteTo(io.Discard)
	g.p.Put(b)
	return c
}

func (*byteBufferPoolGrowable) Close() {}
