package bytepool

import (
	"errors"
	"io"
	"unicode/utf8"
)

// minRead is the free space ReadFrom makes before each Read, as bytes.Buffer.
const minRead = 512

// errNegativeRead is returned by ReadFrom when the reader misbehaves.
var errNegativeRead = errors.New("bytepool: Buffer.ReadFrom: reader returned negative count")

// Buffer is a growable byte buffer whose storage comes from a Pool: when it
// must grow it takes a buffer of a larger class from the pool, copies, and
// puts the old one back; Release gives the storage back.
//
// The zero Buffer is empty, ready to use, and draws from Default(). A Buffer
// is not safe for concurrent use, and must not be copied after first use (the
// copies would share storage that Release gives back).
type Buffer struct {
	_    noCopy
	pool *Pool  // nil: Default()
	buf  []byte // buf[:len] is the content; storage from pool, or nil
}

// NewBuffer returns an empty Buffer drawing from p, with room for at least
// size bytes (none is taken from the pool if size is 0).
func (p *Pool) NewBuffer(size int) *Buffer {
	b := &Buffer{pool: p}
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

// Len returns the number of bytes in the buffer.
func (b *Buffer) Len() int { return len(b.buf) }

// Cap returns the capacity of the buffer's storage.
func (b *Buffer) Cap() int { return cap(b.buf) }

// Bytes returns the content. The slice is valid only until the next write,
// Reset or Release: writes may move the content to another buffer and give
// this one back to the pool.
func (b *Buffer) Bytes() []byte { return b.buf }

// String returns a copy of the content as a string. On a nil *Buffer it
// returns "<nil>", like bytes.Buffer.
func (b *Buffer) String() string {
	if b == nil {
		return "<nil>"
	}
	return string(b.buf)
}

// Reset empties the buffer and keeps its storage.
func (b *Buffer) Reset() { b.buf = b.buf[:0] }

// Release empties the buffer and puts its storage back in the pool. Slices
// returned by Bytes must not be used afterwards. The Buffer itself may be
// used again: it takes new storage on its next write.
func (b *Buffer) Release() {
	if cap(b.buf) > 0 {
		b.p().Put(b.buf)
	}
	b.buf = nil
}

// Grow makes room for n more bytes without another growth. It panics if n is
// negative.
func (b *Buffer) Grow(n int) {
	if n < 0 {
		panic("bytepool: Buffer.Grow: negative count")
	}
	l, old := b.grow(n)
	b.buf = b.buf[:l]
	b.putOld(old)
}

// grow extends the content by n bytes, moving it to a larger buffer from the
// pool if needed, and returns the old length and the storage it moved from
// (nil if it did not move). The caller gives that storage back with putOld
// once it has finished reading what it appends, which may come from the old
// storage itself (b.Write(b.Bytes())).
func (b *Buffer) grow(n int) (l int, old []byte) {
	l = len(b.buf)
	if n <= cap(b.buf)-l {
		b.buf = b.buf[:l+n]
		return l, nil
	}
	need := l + n
	if need < l {
		panic("bytepool: Buffer: too large")
	}
	p := b.p()
	nb := p.Get(max(need, 2*cap(b.buf), p.minSize))
	copy(nb, b.buf)
	old, b.buf = b.buf, nb[:need]
	return l, old
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
	l, old := b.grow(len(p))
	n := copy(b.buf[l:], p)
	b.putOld(old)
	return n, nil
}

// WriteString appends s to the buffer. It always returns len(s), nil.
func (b *Buffer) WriteString(s string) (int, error) {
	l, old := b.grow(len(s))
	n := copy(b.buf[l:], s)
	b.putOld(old)
	return n, nil
}

// WriteByte appends c to the buffer. It always returns nil.
func (b *Buffer) WriteByte(c byte) error {
	l, old := b.grow(1)
	b.buf[l] = c
	b.putOld(old)
	return nil
}

// WriteRune appends the UTF-8 encoding of r. It always returns its length, nil.
func (b *Buffer) WriteRune(r rune) (int, error) {
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

// ReadFrom appends data read from r until io.EOF and returns the number of
// bytes read. Any error other than io.EOF is returned.
func (b *Buffer) ReadFrom(r io.Reader) (int64, error) {
	var total int64
	for {
		l, old := b.grow(minRead)
		b.buf = b.buf[:l]
		n, err := r.Read(b.buf[l:cap(b.buf)])
		b.putOld(old)
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

// WriteTo writes the content to w and removes what was written. It returns
// the number of bytes written and the first error; a short write without an
// error is reported as io.ErrShortWrite.
func (b *Buffer) WriteTo(w io.Writer) (int64, error) {
	if len(b.buf) == 0 {
		return 0, nil
	}
	n, err := w.Write(b.buf)
	if n < 0 || n > len(b.buf) {
		panic("bytepool: Buffer.WriteTo: invalid Write count")
	}
	b.buf = b.buf[:copy(b.buf, b.buf[n:])]
	if err == nil && len(b.buf) > 0 {
		err = io.ErrShortWrite
	}
	return int64(n), err
}
