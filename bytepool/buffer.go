package bytepool

import (
	"bytes"
	"errors"
	"io"
	"math/bits"
	"strings"
	"unicode/utf8"

	"github.com/poolkit/poolkit/internal/nocopy"
	"github.com/poolkit/poolkit/internal/shard"
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
// A Buffer that Pool.NewBuffer makes without a size hint starts with room
// for what its pool has learnt that such Buffers reach: the 95th percentile
// of the largest content of the last 64 Buffers freed on one P (the 4th
// largest of the 64, rounded up to its class), at most MaxSize, published
// again every 64 Buffers freed on a P. So the Buffers of a steady workload
// do not grow; up to three outliers in 64, a 64 MiB body among small ones,
// do not change the size; and what a pool has learnt is forgotten within
// 64 Buffers freed on a P once its workload changes. A Buffer that outgrows
// the size doubles, taking each larger buffer from the pool and putting the
// smaller back. Hint the size (NewBuffer(n), or Grow(n) on a Buffer without
// storage: the storage is then n's class, whatever the pool has learnt)
// where you know it, or where one pool serves Buffers of different sizes;
// or give each call site a [Sizer], which learns for its Buffers alone.
//
// The zero Buffer is empty, ready to use, and draws from Default(); it takes
// storage at its first write, of the size Default() has learnt. A Buffer
// from Pool.NewBuffer is a pooled header as well: Free gives both the storage
// and the header back (keeping the last Buffer freed on each P ready, storage
// and all, for the next NewBuffer there, within the pool's budget), so a
// Buffer used for one request and freed allocates nothing once the pools are
// warm, even where it is passed as an io.Writer (which makes a Buffer escape
// to the heap).
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
	// hi is the most len(buf) has been before it fell (see mark): with
	// len(buf), the largest content of this use, which Free teaches.
	hi int
	// learn is the learner Free teaches and a first growth without a hint
	// reads: a Sizer's, or nil for the pool's.
	learn *learner
	// pooled marks a header NewBuffer handed out, which Free gives back.
	pooled bool
}

// NewBuffer returns an empty Buffer drawing from p, with room for at least
// size bytes: the class of size, or, for size 0, the size p has learnt that
// its Buffers reach (none before it has learnt one: the Buffer then takes
// storage at its first write; see Buffer). The header comes from a cache
// of p's, to which Free returns it. NewBuffer panics if size is negative.
func (p *Pool) NewBuffer(size int) *Buffer {
	return p.newBuffer(size, &p.learn, nil)
}

// newBuffer is NewBuffer for a Buffer that teaches learn (nil: the pool)
// and starts, without a hint, at the size l has learnt.
func (p *Pool) newBuffer(size int, l, learn *learner) *Buffer {
	if size < 0 {
		panic("bytepool: NewBuffer: negative size")
	}
	p.ensure()
	class := 0 // the capacity of a Get(size)
	if size == 0 {
		size = l.startSize(p)
		class = size
	} else {
		class = p.classOf(size)
	}
	// The Buffer Free kept ready on this P, if any (see readyState), taken
	// in one pinned section.
	pid, t := shard.Enter(), p.ready.table() // in this order
	var b *Buffer
	if uint(pid) < uint(len(t.slots)) {
		s := &t.slots[pid]
		if b = s.b; b != nil {
			s.b, s.size = nil, 0
		}
	}
	shard.Exit()
	if b != nil && cap(b.buf) == class {
		b.pool, b.learn = p, learn // the rest as Free left it
		return b
	}
	return p.newBufferSlow(b, size, learn)
}

// newBufferSlow is newBuffer without a Buffer kept ready of size's class: it
// takes a header from the cache of headers if b is nil, and gives b storage
// of size's class, putting back what it had.
func (p *Pool) newBufferSlow(b *Buffer, size int, learn *learner) *Buffer {
	if b == nil {
		b, _ = p.buffers.Get().(*Buffer)
		if b == nil {
			b = &Buffer{}
		}
	}
	if cap(b.buf) > 0 {
		p.Put(b.buf)
	}
	b.buf = nil
	if size > 0 {
		b.buf = p.Get(size)[:0]
	}
	b.pool, b.pooled, b.learn = p, true, learn
	b.dbg.reuse()
	return b
}

// p returns the pool b draws from, Default() for a zero Buffer.
func (b *Buffer) p() *Pool {
	if p := b.pool; p != nil {
		return p
	}
	return b.byDefault()
}

// byDefault makes a zero Buffer draw from Default(), and returns it.
func (b *Buffer) byDefault() *Pool {
	b.pool = Default()
	return b.pool
}

// learner returns the learner b teaches, for b drawing from p: its Sizer's,
// or p's.
func (b *Buffer) learner(p *Pool) *learner {
	if b.learn != nil {
		return b.learn
	}
	return &p.learn
}

// mark notes the content's length before it falls (a Reset, a Truncate, a
// slide or a move to other storage), so that Free teaches the largest.
func (b *Buffer) mark() { b.hi = max(b.hi, len(b.buf)) }

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
	b.mark()
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
	b.mark()
	b.buf = b.buf[:b.off+n]
}

// Free puts the buffer's storage back in the pool and, for a Buffer that
// Pool.NewBuffer returned, the header back in that pool's cache for a later
// NewBuffer; the pool (or the Sizer) learns the largest content the Buffer
// held. Neither b nor anything read from it (the slices Bytes and Next
// returned) may be used afterwards: b, storage and all, may be the next
// Buffer NewBuffer returns. To empty a Buffer and keep using it, call Reset.
func (b *Buffer) Free() {
	b.dbg.live()
	p := b.p()
	l := b.learner(p)
	// The common case, in one pinned section: teach l that the content
	// reached hw bytes and keep b, a header NewBuffer made, with its
	// storage, ready in the P's slot (see readyState), if the slot is
	// empty and the storage is what the next NewBuffer without a hint
	// takes, within readyMax. A Buffer kept keeps pooled set, and reaches
	// neither its pool nor its Sizer (the cleanup of a collected Pool holds
	// the slots, see releaseAll): the next NewBuffer on the P sets them.
	pid, t := shard.Enter(), p.ready.table() // in this order
	hw, c := max(b.hi, len(b.buf)), cap(b.buf)
	if b.pooled && recycleHeaders && uint(pid) < uint(len(t.slots)) &&
		t.slots[pid].b == nil && c <= p.readyMax && c == l.startSize(p) {
		if w := l.window(pid); w != nil || hw <= 0 {
			if hw > 0 && w.add(lesson(hw)) {
				l.publish(w)
			}
			b.buf, b.off, b.hi = b.buf[:0], 0, 0
			b.pool, b.learn = nil, nil
			s := &t.slots[pid]
			s.b, s.size = b, c
			shard.Exit()
			return
		}
	}
	shard.Exit()
	b.freeSlow(p, l)
}

// freeSlow is Free where its pinned section did not keep b: it teaches l,
// keeps b's header alone ready if it was made by NewBuffer and the slot of
// the P it runs on is empty, and gives back what it does not keep: the
// storage to the pool (Put), the header to the cache of headers.
func (b *Buffer) freeSlow(p *Pool, l *learner) {
	if hw := max(b.hi, len(b.buf)); hw > 0 {
		l.teach(lesson(hw))
	}
	buf := b.buf
	b.buf, b.off, b.hi, b.learn = nil, 0, 0, nil
	b.dbg.free()
	if b.pooled {
		b.pool = nil
		kept := false
		if recycleHeaders {
			pid, t := shard.Enter(), p.ready.table() // in this order
			if uint(pid) < uint(len(t.slots)) && t.slots[pid].b == nil {
				t.slots[pid].b = b
				kept = true
			}
			shard.Exit()
		}
		if !kept {
			b.pooled = false
			if recycleHeaders {
				p.buffers.Put(b)
			}
		}
	}
	if cap(buf) > 0 {
		p.Put(buf)
	}
}

// Grow makes room for n more bytes without another growth. It panics if n is
// negative. On a Buffer without storage, n is a hint taken as is: the
// storage is n's class, whatever the pool has learnt.
func (b *Buffer) Grow(n int) {
	b.dbg.live()
	if n < 0 {
		panic("bytepool: Buffer.Grow: negative count")
	}
	if n <= cap(b.buf)-len(b.buf) {
		return
	}
	l, old := b.grow(n, true)
	b.buf = b.buf[:l]
	b.putOld(old)
}

// grow extends the content by n bytes, for a caller that found fewer than n
// bytes free after it, and returns the index where they start and the
// storage it moved from (nil if it did not move). It slides the unread
// content to the front when that makes room, as bytes.Buffer does, and
// otherwise moves it to a larger buffer from the pool: twice the storage it
// has, at least; for a Buffer without storage, the size learnt, unless the
// caller's n is a hint. The caller gives the old storage back with putOld
// once it has finished reading what it appends, which may come from that
// storage itself (b.Write(b.Bytes())).
func (b *Buffer) grow(n int, hint bool) (l int, old []byte) {
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
	b.mark()
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
	switch {
	case need <= size:
	case size == 0 && !hint:
		size = max(need, p.minSize, b.learner(p).startSize(p))
	case size == 0:
		size = max(need, p.minSize)
	default:
		// Twice the storage, at least, rounded up to a power of two: the
		// Buffers that outgrow their start size take the same classes,
		// whatever size they started at, and a pool keeps one chain of
		// them, not one per start size.
		size = 1 << bits.Len(uint(max(need, 2*size)-1))
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
	if l := len(b.buf); len(p) <= cap(b.buf)-l {
		b.buf = b.buf[:l+len(p)]
		return copy(b.buf[l:], p), nil
	}
	return b.writeSlow(p)
}

// writeSlow is Write where p does not fit the free room.
func (b *Buffer) writeSlow(p []byte) (int, error) {
	l, old := b.grow(len(p), false)
	n := copy(b.buf[l:], p)
	b.putOld(old)
	return n, nil
}

// WriteString appends s to the buffer. It always returns len(s), nil.
func (b *Buffer) WriteString(s string) (int, error) {
	b.dbg.live()
	if l := len(b.buf); len(s) <= cap(b.buf)-l {
		b.buf = b.buf[:l+len(s)]
		return copy(b.buf[l:], s), nil
	}
	return b.writeStringSlow(s)
}

// writeStringSlow is WriteString where s does not fit the free room.
func (b *Buffer) writeStringSlow(s string) (int, error) {
	l, old := b.grow(len(s), false)
	n := copy(b.buf[l:], s)
	b.putOld(old)
	return n, nil
}

// WriteByte appends c to the buffer. It always returns nil.
func (b *Buffer) WriteByte(c byte) error {
	b.dbg.live()
	if l := len(b.buf); l < cap(b.buf) {
		b.buf = b.buf[:l+1]
		b.buf[l] = c
		return nil
	}
	l, old := b.grow(1, false)
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
	l, old := b.grow(utf8.UTFMax, false)
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
// until the next read, write, Truncate, Reset or Free. It panics if n is
// negative, as bytes.Buffer's does.
func (b *Buffer) Next(n int) []byte {
	b.dbg.live()
	if n < 0 {
		panic("bytepool: Buffer.Next: negative count")
	}
	m := min(n, b.Len())
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
	if hint := sizeHint(r); hint > 0 {
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
	m := len(b.buf) - b.off
	if m == 0 {
		b.Reset()
		return 0, nil
	}
	n, err := w.Write(b.buf[b.off:])
	if uint(n) > uint(m) { // n < 0 or n > m
		panic("bytepool: Buffer.WriteTo: invalid Write count")
	}
	if n == m { // all written: empty, as Reset
		b.mark()
		b.buf, b.off = b.buf[:0], 0
		return int64(n), err
	}
	b.off += n
	if err == nil {
		err = io.ErrShortWrite
	}
	return int64(n), err
}
