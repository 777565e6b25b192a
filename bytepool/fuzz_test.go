package bytepool_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/poolkit/poolkit/bytepool"
)

// FuzzGetPut checks, for any n and any foreign capacity, that Get(n) has
// length n and capacity n's class size (or exactly n above MaxSize), before
// and after Put round trips that include foreign slices.
func FuzzGetPut(f *testing.F) {
	const minSize, maxSize = 64, 1 << 20
	p, err := bytepool.New(bytepool.Config{MinSize: minSize, MaxSize: maxSize})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][2]uint32{{0, 0}, {1, 63}, {64, 64}, {65, 127}, {4096, 5000}, {maxSize, 2*maxSize - 1}, {maxSize + 1, 2 * maxSize}, {3 << 20, 100}} {
		f.Add(seed[0], seed[1])
	}
	want := func(n int) int {
		if n > maxSize {
			return n
		}
		// MinSize, then four classes per power of two k: k×5/4 … k×8/4.
		if n <= minSize {
			return minSize
		}
		k := minSize
		for 2*k < n {
			k *= 2
		}
		return (n + k/4 - 1) / (k / 4) * (k / 4)
	}
	check := func(t *testing.T, n int) []byte {
		b := p.Get(n)
		if len(b) != n || cap(b) != want(n) {
			t.Fatalf("Get(%d): len %d cap %d, want len %d cap %d", n, len(b), cap(b), n, want(n))
		}
		return b
	}
	f.Fuzz(func(t *testing.T, n32, foreignCap32 uint32) {
		n := int(n32 % (4 << 20))
		foreignCap := int(foreignCap32 % (4 << 20))
		b := check(t, n)
		p.Put(b)
		p.Put(make([]byte, foreignCap/2, foreignCap))
		b = check(t, n)
		c := check(t, n/2+1)
		p.Put(c)
		p.Put(b)
		check(t, foreignCap)
	})
}

// FuzzBufferMatchesBytesBuffer runs the sequence of operations the input
// encodes on a Buffer and on a bytes.Buffer, and requires the same results,
// length and content after each. The Buffer draws from a pool whose classes
// end at 4 KiB, so that content grows through the classes and past them;
// the pool learns from the Buffers freed along the way. After Grow(n), n
// bytes are written without another growth.
func FuzzBufferMatchesBytesBuffer(f *testing.F) {
	p, err := bytepool.New(bytepool.Config{MinSize: 16, MaxSize: 4 << 10})
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{"", "\x00\x05hello\x04\x03", "\x01\xff\x0a\x08\x09\x20\x06\x07", "\x02\x41\x03\xe2\x0b\x10\x0c", "\x00\x80\x05\x00\x0d\x04\x0e"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		got, want := p.NewBuffer(0), new(bytes.Buffer)
		defer func() { got.Free() }()
		next := func() int { // the next argument byte, 0 past the end
			if len(ops) == 0 {
				return 0
			}
			c := ops[0]
			ops = ops[1:]
			return int(c)
		}
		text := func(n int) []byte { // n bytes of the input, or of a pattern past its end
			b := make([]byte, n)
			for i := range b {
				b[i] = byte('a' + (i+len(ops))%26)
			}
			copy(b, ops)
			return b
		}
		for step := 0; len(ops) > 0 && step < 256; step++ {
			if want.Len() > 16<<10 { // the content written into itself doubles
				got.Reset()
				want.Reset()
			}
			var g, w string
			switch op := next() % 15; op {
			case 0: // Write of up to 4 KiB: past MaxSize in a few
				s := text(next() * 16)
				n1, e1 := got.Write(s)
				n2, e2 := want.Write(s)
				g, w = fmt.Sprint(n1, e1), fmt.Sprint(n2, e2)
			case 1:
				s := string(text(next()))
				n1, e1 := got.WriteString(s)
				n2, e2 := want.WriteString(s)
				g, w = fmt.Sprint(n1, e1), fmt.Sprint(n2, e2)
			case 2:
				c := byte(next())
				g, w = fmt.Sprint(got.WriteByte(c)), fmt.Sprint(want.WriteByte(c))
			case 3:
				r := rune(next()<<16 | next()<<8 | next())
				n1, e1 := got.WriteRune(r)
				n2, e2 := want.WriteRune(r)
				g, w = fmt.Sprint(n1, e1), fmt.Sprint(n2, e2)
			case 4:
				k := next()
				b1, b2 := make([]byte, k), make([]byte, k)
				n1, e1 := got.Read(b1)
				n2, e2 := want.Read(b2)
				g, w = fmt.Sprint(n1, e1, string(b1[:n1])), fmt.Sprint(n2, e2, string(b2[:n2]))
			case 5:
				c1, e1 := got.ReadByte()
				c2, e2 := want.ReadByte()
				g, w = fmt.Sprint(c1, e1), fmt.Sprint(c2, e2)
			case 6:
				k := next() * 4
				g, w = string(got.Next(k)), string(want.Next(k))
			case 7:
				k := next() % (want.Len() + 1)
				got.Truncate(k)
				want.Truncate(k)
			case 8:
				var o1, o2 bytes.Buffer
				n1, e1 := got.WriteTo(&o1)
				n2, e2 := want.WriteTo(&o2)
				g, w = fmt.Sprint(n1, e1, o1.String()), fmt.Sprint(n2, e2, o2.String())
			case 9: // a reader that says its size
				s := string(text(next() * 16))
				n1, e1 := got.ReadFrom(strings.NewReader(s))
				n2, e2 := want.ReadFrom(strings.NewReader(s))
				g, w = fmt.Sprint(n1, e1), fmt.Sprint(n2, e2)
			case 10: // one that does not, a byte at a time
				s := string(text(next() * 16))
				n1, e1 := got.ReadFrom(iotest.OneByteReader(strings.NewReader(s)))
				n2, e2 := want.ReadFrom(iotest.OneByteReader(strings.NewReader(s)))
				g, w = fmt.Sprint(n1, e1), fmt.Sprint(n2, e2)
			case 11:
				got.Reset()
				want.Reset()
			case 12: // Grow(n), then n bytes without another growth
				n := next() * 24
				got.Grow(n)
				want.Grow(n)
				c := got.Cap()
				s := text(n)
				_, _ = got.Write(s)
				_, _ = want.Write(s)
				if got.Cap() != c {
					t.Fatalf("step %d: Grow(%d) left Cap %d, and writing %d bytes grew it to %d", step, n, c, n, got.Cap())
				}
			case 13: // the content written into itself
				_, _ = got.Write(got.Bytes())
				_, _ = want.Write(want.Bytes())
			case 14: // Free, and a new Buffer: the pool learns
				got.Free()
				got = p.NewBuffer(next() % 3 * 100)
				want.Reset()
			}
			if g != w || got.Len() != want.Len() || got.String() != want.String() || !bytes.Equal(got.Bytes(), want.Bytes()) || got.Cap() < got.Len() {
				t.Fatalf("step %d: got %q (Len %d, Cap %d, content %q), bytes.Buffer %q (Len %d, content %q)",
					step, g, got.Len(), got.Cap(), got.String(), w, want.Len(), want.String())
			}
		}
	})
}
