package bytepool

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/poolkit/poolkit/internal/nocopy"
)

// minRead is the free space ReadFrom makes before each Read, as bytes.Buffer.
const minRead = 512

// errNegativeRead is returned by ReadFrom when the reader misbehaves.
var errNegativeRead = errors.New("bytepool: Buffer.ReadFrom: reader returned negative count")

// Buffer is a growable byte buffer whose storage comes from a Pool, read and
// written like a bytes.Buffer: when it must grow it takes a buffer of a
// larger class from the pool, copies what is unread, and puts the old one
// back; Free gives the storage back.
//
// The zero Buffer is empty, ready to use, and draws from Default(). A Buffer
// from Pool.NewBuffer is a pooled header as well: Free gives both the storage
// and the header back, so a Buffer used for one request and freed allocates
// nothing once the pools are warm, even where it is passed as an io.Writer
// (which makes a Buffer escape to the heap).
//
// A Buffer is not safe for concurrent use, must not be copied after first
// use (the copies would share storage that Free gives back), and must not be
// used after Free. Built with the tag poolkit_debug, every method of a
// Buffer used after Free panics with a "bytepool: " message (and Free does
// not give NewBuffer headers back, so that a stale pointer to one cannot
// reach the next holder's buffer).
type Buffer struct {
	_    nocopy.NoCopy
	dbg  bufferState // poolkit_debug: freed; empty otherwise
	pool *Pool       // nil: Default()
	buf  []byte      // buf[off:] is the content; storage from pool, or nil
	off  int         // read offset: bytes before it have been read
	// pooled marks a header NewBuffer handed out, which Free gives back.
	pooled bool
}

// NewBuffer returns an empty Buffer drawing from p, with room for at least
// size bytes (none is taken from the pool if size is 0). The header comes
// from a cache of p's, to which Free returns it.
func (p *Pool) NewBuffer(size int) *Buffer {
	b, _ := p.buffers.Get().(*Buffer)
	if b == nil {
		b = &Buffer{}
	}
	b.pool, b.pooled = p, true
	b.dbg.reuse()
	if size > 0 {
		b.buf = p.Get(size)[:0]
	}
	return b
}

func (b *Buffer) p() *Pool {
	if b.pool == nil {
		b.pool = Default()
	}
	return b.pool
}

// Len returns the number of unread bytes in the buffer.
func (b *Buffer) Len() int {
	b.dbg.live()
	return len(b.buf) - b.off
}

// Cap returns the capacity of the buffer's storage.
func (b *Buffer) Cap() int {
	b.dbg.live()
	return cap(b.buf)
}

// Bytes returns the unread content. The slice is valid only until the next
// read, write, Truncate, Reset or Free: writes may move the content to
// another buffer and give this one back to the pool.
func (b *Buffer) Bytes() []byte {
	b.dbg.live()
	return b.buf[b.off:]
}

// String returns a copy of the unread content as a string. On a nil *Buffer
// it returns "<nil>", like bytes.Buffer.
func (b *Buffer) String() string {
	if b == nil {
		return "<nil>"
	}
	b.dbg.live()
	return string(b.buf[b.off:])
}

// Reset empties the buffer and keeps its storage.
func (b *Buffer) Reset() {
	b.dbg.live()
	b.buf = b.buf[:0]
	b.off = 0
}

// Truncate discards all but the first n unread bytes and keeps the storage.
// It panics if n is negative or greater than Len.
func (b *Buffer) Truncate(n int) {
	b.dbg.live()
	if n == 0 {
		b.Reset()
		return
	}
	if n < 0 || n > b.Len() {
		panic("bytepool: Buffer.Truncate: out of range")
	}
	b.buf = b.buf[:b.off+n]
}

// Free puts the buffer's storage back in the pool and, for a Buffer that
// Pool.NewBuffer returned, the header back in that pool's cache for a later
// NewBuffer. Neither b nor anything read from it (the slices Bytes and Next
// returned) may be used afterwards. To empty a Buffer and keep using it,
// call Reset.
func (b *Buffer) Free() {
	b.dbg.live()
	if cap(b.buf) > 0 {
		b.p().Put(b.buf)
	}
	b.buf, b.off = nil, 0
	b.dbg.free()
	if b.pooled {
		p := b.pool
		b.pool, b.pooled = nil, false
		if recycleHeaders {
			p.buffers.Put(b)
		}
	}
}

// Grow makes room for n more bytes without another growth. It panics if n is
// negative.
func (b *Buffer) Grow(n int) {
	b.dbg.live()
	if n < 0 {
		panic("bytepool: Buffer.Grow: negative count")
	}
	l, old := b.grow(n)
	b.buf = b.buf[:l]
	b.putOld(old)
}

// grow extends the content by n bytes and returns the index where they
// start and the storage it moved from (nil if it did not move). It slides
// the unread content to the front when that makes room, as bytes.Buffer
// does, and otherwise moves it to a larger buffer from the pool. The caller
// gives the old storage back with putOld once it has finished reading what
// it appends, which may come from that storage itself (b.Write(b.Bytes())).
func (b *Buffer) grow(n int) (l int, old []byte) {
	l = len(b.buf)
	if n <= cap(b.buf)-l {
		b.buf = b.buf[:l+n]
		return l, nil
	}
	unread := l - b.off
	need := unread + n
	if need < unread {
		panic("bytepool: Buffer: too large")
	}
	if need <= cap(b.buf) && b.off >= unread {
		// Slide the unread bytes to the front. They land below off, so
		// what a caller appends from b's own content (b.Write(b.Bytes()),
		// which lies in [off, l)) is still intact when it is copied.
		copy(b.buf, b.buf[b.off:l])
		b.buf, b.off = b.buf[:need], 0
		return unread, nil
	}
	p := b.p()
	size := cap(b.buf) // room enough once the read bytes are dropped
	if need > size {
		size = max(need, 2*size, p.minSize)
	}
	nb := p.Get(size)
	copy(nb, b.buf[b.off:l])
	old, b.buf, b.off = b.buf, nb[:need], 0
	return unread, old
}

// putOld gives back storage grow moved from.
func (b *Buffer) putOld(old []byte) {
	if cap(old) > 0 {
		b.p().Put(old)
	}
}

// Write appends p to the buffer. It always returns len(p), nil. p may be the
// buffer's own content (b.Write(b.Bytes())).
func (b *Buffer) Write(p []byte) (int, error) {
	b.dbg.live()
	l, old := b.grow(len(p))
	n := copy(b.buf[l:], p)
	b.putOld(old)
	return n, nil
}

// WriteString appends s to the buffer. It always returns len(s), nil.
func (b *Buffer) WriteString(s string) (int, error) {
	b.dbg.live()
	l, old := b.grow(len(s))
	n := copy(b.buf[l:], s)
	b.putOld(old)
	return n, nil
}

// WriteByte appends c to the buffer. It always returns nil.
func (b *Buffer) WriteByte(c byte) error {
	b.dbg.live()
	l, old := b.grow(1)
	b.buf[l] = c
	b.putOld(old)
	return nil
}

// WriteRune appends the UTF-8 encoding of r. It always returns its length, nil.
func (b *Buffer) WriteRune(r rune) (int, error) {
	b.dbg.live()
	if uint32(r) < utf8.RuneSelf {
		_ = b.WriteByte(byte(r))
		return 1, nil
	}
	l, old := b.grow(utf8.UTFMax)
	n := utf8.EncodeRune(b.buf[l:], r)
	b.buf = b.buf[:l+n]
	b.putOld(old)
	return n, nil
}

// Read reads the next len(p) bytes from the buffer, or until it is empty,
// into p. It returns io.EOF if the buffer has no data to return and len(p)
// is not 0. An emptied buffer keeps its storage.
func (b *Buffer) Read(p []byte) (int, error) {
	b.dbg.live()
	if b.off == len(b.buf) {
		b.Reset()
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := copy(p, b.buf[b.off:])
	b.off += n
	return n, nil
}

// ReadByte reads and returns the next byte, or io.EOF if the buffer is
// empty.
func (b *Buffer) ReadByte() (byte, error) {
	b.dbg.live()
	if b.off == len(b.buf) {
		b.Reset()
		return 0, io.EOF
	}
	c := b.buf[b.off]
	b.off++
	return c, nil
}

// Next returns the next n unread bytes (all of them if there are fewer),
// advancing the buffer as if they had been read. The slice is valid only
// until the next read, write, Truncate, Reset or Free.
func (b *Buffer) Next(n int) []byte {
	b.dbg.live()
	m := min(n, b.Len())
	if m < 0 {
		m = 0
	}
	data := b.buf[b.off : b.off+m]
	b.off += m
	return data
}

// ReadFrom appends data read from r until io.EOF and returns the number of
// bytes read. Any error other than io.EOF is returned.
//
// It reads into the free room the storage has, and grows only when that is
// full: a caller that knows the size of what it reads (a Content-Length)
// calls Grow with it first, and the content then stays in the class of its
// size. ReadFrom also learns the size by itself from a *bytes.Reader,
// *strings.Reader or *bytes.Buffer (not from an io.LimitedReader, whose N
// is a bound that may be far above what it holds). When the storage is
// full, it reads ahead into a small buffer from the pool, so that the read
// that finds io.EOF does not grow the storage into a larger class.
func (b *Buffer) ReadFrom(r io.Reader) (int64, error) {
	b.dbg.live()
	if hint := sizeHint(r); hint > 0 && hint > cap(b.buf)-len(b.buf) {
		b.Grow(hint)
	}
	var total int64
	for {
		if len(b.buf) == cap(b.buf) {
			n, err := b.readAhead(r)
			total += int64(n)
			if n < 0 {
				return total, errNegativeRead
			}
			if err == io.EOF {
				return total, nil
			}
			if err != nil {
				return total, err
			}
			continue
		}
		l := len(b.buf)
		n, err := r.Read(b.buf[l:cap(b.buf)])
		if n < 0 {
			return total, errNegativeRead
		}
		b.buf = b.buf[:l+n]
		total += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// readAhead reads from r into a buffer of minRead bytes from the pool and
// appends what it read; it is ReadFrom's read when the storage is full.
func (b *Buffer) readAhead(r io.Reader) (int, error) {
	p := b.p()
	ahead := p.Get(minRead)
	n, err := r.Read(ahead)
	if n > 0 {
		_, _ = b.Write(ahead[:min(n, len(ahead))])
	}
	p.Put(ahead)
	return n, err
}

// sizeHint returns how many bytes r will yield, for the readers that say;
// 0 when unknown.
func sizeHint(r io.Reader) int {
	switch r := r.(type) {
	case *bytes.Reader:
		return r.Len()
	case *strings.Reader:
		return r.Len()
	case *bytes.Buffer:
		return r.Len()
	}
	return 0
}

// WriteTo writes the unread content to w and removes what was written. It
// returns the number of bytes written and the first error; a short write
// without an error is reported as io.ErrShortWrite. An emptied buffer keeps
// its storage.
func (b *Buffer) WriteTo(w io.Writer) (int64, error) {
	b.dbg.live()
	if b.Len() == 0 {
		b.Reset()
		return 0, nil
	}
	m := b.Len()
	n, err := w.Write(b.buf[b.off:])
	if n < 0 || n > m {
		panic("bytepool: Buffer.WriteTo: invalid Write count")
	}
	b.off += n
	if b.off == len(b.buf) {
		b.Reset()
	}
	if err == nil && n < m {
		err = io.ErrShortWrite
	}
	return int64(n), err
}
