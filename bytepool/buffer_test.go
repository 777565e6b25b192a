package bytepool_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/poolkit/poolkit/bytepool"
)

func TestBufferGrowsThroughClassesAndReleases(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 64, MaxSize: 1 << 16, Exchange: bytepool.ExchangeMutex})
	b := p.NewBuffer(10)
	if b.Cap() != 64 {
		t.Fatalf("Cap %d, want 64", b.Cap())
	}
	var want bytes.Buffer
	for i := range 20000 {
		c := byte('a' + i%26)
		_ = b.WriteByte(c)
		want.WriteByte(c)
		if i%1000 == 0 {
			_, _ = b.WriteString("xyz")
			want.WriteString("xyz")
			_, _ = b.Write([]byte{1, 2})
			want.Write([]byte{1, 2})
			_, _ = b.WriteRune('é')
			want.WriteRune('é')
		}
	}
	if !bytes.Equal(b.Bytes(), want.Bytes()) || b.String() != want.String() || b.Len() != want.Len() {
		t.Fatal("content differs from bytes.Buffer")
	}
	if b.Cap()&(b.Cap()-1) != 0 {
		t.Fatalf("Cap %d is not a class size", b.Cap())
	}
	if s := p.Stats(); s.Retained == 0 {
		t.Fatal("growth did not give the smaller buffers back")
	}
	b.Reset()
	if b.Len() != 0 || b.Cap() == 0 {
		t.Fatal("Reset should keep storage")
	}
	// Reusable after Reset.
	_, _ = b.WriteString("again")
	if b.String() != "again" {
		t.Fatalf("String %q", b.String())
	}
	before := p.Stats().Retained
	b.Free()
	if s := p.Stats(); s.Retained <= before {
		t.Fatalf("Retained %d after Free, %d before: the final storage was not returned", s.Retained, before)
	}
}

func TestBufferBeyondMaxSize(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 64, MaxSize: 1024})
	b := p.NewBuffer(0)
	_, _ = b.Write(make([]byte, 5000))
	if b.Len() != 5000 {
		t.Fatalf("Len %d", b.Len())
	}
	b.Free()
}

func TestBufferReadFromAndWriteTo(t *testing.T) {
	var b bytepool.Buffer
	src := strings.Repeat("0123456789", 3000)
	n, err := b.ReadFrom(iotest.OneByteReader(strings.NewReader(src[:700])))
	if err != nil || n != 700 {
		t.Fatalf("ReadFrom: %d, %v", n, err)
	}
	n, err = b.ReadFrom(iotest.HalfReader(strings.NewReader(src[700:])))
	if err != nil || n != int64(len(src)-700) || b.String() != src {
		t.Fatalf("ReadFrom: %d, %v", n, err)
	}
	boom := errors.New("boom")
	if _, err := b.ReadFrom(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Fatalf("ReadFrom error = %v", err)
	}
	var out bytes.Buffer
	n, err = b.WriteTo(&out)
	if err != nil || n != int64(len(src)) || out.String() != src || b.Len() != 0 {
		t.Fatalf("WriteTo: %d, %v, Len %d", n, err, b.Len())
	}
	_, _ = b.WriteString("abcdef")
	n, err = b.WriteTo(shortWriter{3})
	if n != 3 || !errors.Is(err, io.ErrShortWrite) || b.String() != "def" {
		t.Fatalf("short WriteTo: %d, %v, left %q", n, err, b.String())
	}
	b.Free()
}

type shortWriter struct{ n int }

func (w shortWriter) Write(p []byte) (int, error) { return min(w.n, len(p)), nil }

func TestBufferGrowNegativePanics(t *testing.T) {
	defer func() {
		if r, _ := recover().(string); !strings.HasPrefix(r, "bytepool: ") {
			t.Fatalf("recover() = %q", r)
		}
	}()
	var b bytepool.Buffer
	b.Grow(-1)
}

// TestBufferWriteOfItsOwnContent writes a Buffer's content into itself across
// a growth: the old storage must not go back to the pool before the copy has
// read it. ZeroOnPut makes a premature Put visible (the copy reads zeros), and
// with the Mmap allocator and no retention a premature Put unmaps it.
func TestBufferWriteOfItsOwnContent(t *testing.T) {
	for _, a := range allocators() {
		t.Run("Alloc="+a.name, func(t *testing.T) {
			for _, cfg := range []bytepool.Config{{ZeroOnPut: true}, {MaxRetained: 1}} {
				p := newPool(t, a, cfg)
				b := p.NewBuffer(64)
				_, _ = b.WriteString(strings.Repeat("x", 64))
				_, _ = b.Write(b.Bytes()) // grows to 128: the source is the old storage
				_, _ = b.WriteString(b.String())
				if want := strings.Repeat("x", 256); b.String() != want {
					t.Fatalf("%+v: content %q, want 256 x", cfg, b.String())
				}
				b.Free()
			}
		})
	}
}

// TestBufferMatchesBytesBuffer runs the same random sequence of reads and
// writes on a Buffer and a bytes.Buffer and requires the same results,
// content and length after every step.
func TestBufferMatchesBytesBuffer(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 64, MaxSize: 1 << 16})
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		got := p.NewBuffer(r.IntN(200))
		var want bytes.Buffer
		chunk := func() string { return strings.Repeat(string(rune('a'+r.IntN(26))), r.IntN(300)) }
		for step := range 2000 {
			var g, w string
			switch op := r.IntN(11); op {
			case 0:
				s := chunk()
				n1, e1 := got.Write([]byte(s))
				n2, e2 := want.Write([]byte(s))
				g, w = fmt.Sprint(n1, e1), fmt.Sprint(n2, e2)
			case 1:
				s := chunk()
				n1, _ := got.WriteString(s)
				n2, _ := want.WriteString(s)
				g, w = fmt.Sprint(n1), fmt.Sprint(n2)
			case 2:
				c := byte(r.IntN(256))
				g, w = fmt.Sprint(got.WriteByte(c)), fmt.Sprint(want.WriteByte(c))
			case 3:
				c := rune(r.IntN(0x10ffff))
				n1, _ := got.WriteRune(c)
				n2, _ := want.WriteRune(c)
				g, w = fmt.Sprint(n1), fmt.Sprint(n2)
			case 4:
				k := r.IntN(400)
				b1, b2 := make([]byte, k), make([]byte, k)
				n1, e1 := got.Read(b1)
				n2, e2 := want.Read(b2)
				g, w = fmt.Sprint(n1, e1, string(b1[:n1])), fmt.Sprint(n2, e2, string(b2[:n2]))
			case 5:
				c1, e1 := got.ReadByte()
				c2, e2 := want.ReadByte()
				g, w = fmt.Sprint(c1, e1), fmt.Sprint(c2, e2)
			case 6:
				k := r.IntN(400)
				g, w = string(got.Next(k)), string(want.Next(k))
			case 7:
				k := r.IntN(want.Len() + 1)
				got.Truncate(k)
				want.Truncate(k)
			case 8:
				var o1, o2 bytes.Buffer
				n1, e1 := got.WriteTo(&o1)
				n2, e2 := want.WriteTo(&o2)
				g, w = fmt.Sprint(n1, e1, o1.String()), fmt.Sprint(n2, e2, o2.String())
			case 9:
				s := chunk()
				n1, e1 := got.ReadFrom(strings.NewReader(s))
				n2, e2 := want.ReadFrom(strings.NewReader(s))
				g, w = fmt.Sprint(n1, e1), fmt.Sprint(n2, e2)
			case 10:
				if r.IntN(4) == 0 {
					got.Reset()
					want.Reset()
				} else {
					k := r.IntN(500)
					got.Grow(k)
					want.Grow(k)
				}
			}
			if g != w || got.String() != want.String() || got.Len() != want.Len() || !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("seed %d step %d: got %q (content %q), bytes.Buffer %q (content %q)", seed, step, g, got.String(), w, want.String())
			}
		}
		got.Free()
	}
}

// TestBufferWriteOfItsContentAfterReads appends a Buffer's unread content to
// itself once some of it has been read, where the unread part may slide to
// the front of the storage: the appended copy must be what was unread.
func TestBufferWriteOfItsContentAfterReads(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 64, ZeroOnPut: true})
	for read := range 64 {
		b := p.NewBuffer(64)
		_, _ = b.WriteString(strings.Repeat("0123456789abcdef", 4))
		b.Next(read)
		want := b.String() + b.String()
		_, _ = b.Write(b.Bytes())
		if b.String() != want {
			t.Fatalf("after reading %d: content %q, want %q", read, b.String(), want)
		}
		b.Free()
	}
}

// TestBufferNextNegativePanicsAsBytesBuffer: Next(-1) is a bug of the
// caller's, for a Buffer as for a bytes.Buffer.
func TestBufferNextNegativePanicsAsBytesBuffer(t *testing.T) {
	panics := func(f func()) (r any) {
		defer func() { r = recover() }()
		f()
		return nil
	}
	var want bytes.Buffer
	want.WriteString("abc")
	if panics(func() { want.Next(-1) }) == nil {
		t.Fatal("bytes.Buffer.Next(-1) did not panic")
	}
	var b bytepool.Buffer
	_, _ = b.WriteString("abc")
	if r, _ := panics(func() { b.Next(-1) }).(string); !strings.HasPrefix(r, "bytepool: ") {
		t.Fatalf("Next(-1): recover() = %q, want a bytepool: panic", r)
	}
	b.Free()
}

func TestBufferTruncateOutOfRangePanics(t *testing.T) {
	for _, n := range []int{-1, 4} {
		func() {
			defer func() {
				if r, _ := recover().(string); !strings.HasPrefix(r, "bytepool: ") {
					t.Fatalf("Truncate(%d): recover() = %q", n, r)
				}
			}()
			var b bytepool.Buffer
			_, _ = b.WriteString("abc")
			b.Truncate(n)
		}()
	}
}

// TestBufferIOWriterRoundTripAllocatesNothing: a Buffer from NewBuffer,
// written through an io.Writer, read out and freed, allocates nothing once
// the pool and the header cache are warm.
func TestBufferIOWriterRoundTripAllocatesNothing(t *testing.T) {
	if !bytepool.RecycleHeaders {
		t.Skip("the poolkit_debug build does not recycle Buffer headers")
	}
	p := newPool(t, allocator{}, bytepool.Config{})
	payload := bytes.Repeat([]byte("x"), 3000)
	roundTrip := func() {
		b := p.NewBuffer(0)
		var w io.Writer = b
		_, _ = w.Write(payload)
		_, _ = b.WriteTo(io.Discard)
		b.Free()
	}
	roundTrip()
	if n := testing.AllocsPerRun(1000, roundTrip); n != 0 {
		t.Fatalf("%v allocs per round trip, want 0", n)
	}
}

// TestBufferReadFromOfKnownSizeStaysInItsClass: a body whose size ReadFrom
// knows (a strings.Reader), or that the caller announced with Grow, is read
// into the class of its size, even when it fills that class exactly.
func TestBufferReadFromOfKnownSizeStaysInItsClass(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 64})
	for _, n := range []int{64, 1000, 1500, 4096, 9000, 65536} {
		body := strings.Repeat("z", n)
		class := p.ClassSize(n)

		b := p.NewBuffer(0)
		if got, err := b.ReadFrom(strings.NewReader(body)); err != nil || got != int64(n) || b.String() != body {
			t.Fatalf("ReadFrom(strings.Reader of %d): %d, %v", n, got, err)
		}
		if b.Cap() != class {
			t.Errorf("ReadFrom(strings.Reader of %d): Cap %d, want its class %d", n, b.Cap(), class)
		}
		b.Free()

		b = p.NewBuffer(0)
		b.Grow(n)
		if got, err := b.ReadFrom(iotest.HalfReader(strings.NewReader(body))); err != nil || got != int64(n) || b.String() != body {
			t.Fatalf("Grow(%d), ReadFrom: %d, %v", n, got, err)
		}
		if b.Cap() != class {
			t.Errorf("Grow(%d), ReadFrom: Cap %d, want its class %d", n, b.Cap(), class)
		}
		b.Free()
	}
}
