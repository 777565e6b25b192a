package bytepool_test

import (
	"bytes"
	"errors"
	"io"
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
	b.Release()
	if b.Len() != 0 || b.Cap() != 0 {
		t.Fatalf("after Release: Len %d Cap %d", b.Len(), b.Cap())
	}
	if s := p.Stats(); s.Retained < 1<<15 {
		t.Fatalf("Retained %d after Release: the final storage was not returned", s.Retained)
	}
	// Reusable after Release.
	_, _ = b.WriteString("again")
	if b.String() != "again" {
		t.Fatalf("String %q", b.String())
	}
	b.Reset()
	if b.Len() != 0 || b.Cap() == 0 {
		t.Fatal("Reset should keep storage")
	}
	b.Release()
}

func TestBufferBeyondMaxSize(t *testing.T) {
	p := newPool(t, allocator{}, bytepool.Config{MinSize: 64, MaxSize: 1024})
	b := p.NewBuffer(0)
	_, _ = b.Write(make([]byte, 5000))
	if b.Len() != 5000 {
		t.Fatalf("Len %d", b.Len())
	}
	b.Release()
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
	b.Release()
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
				b.Release()
			}
		})
	}
}
