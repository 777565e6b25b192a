package shard_test

import (
	"sync"
	"testing"

	"github.com/poolkit/poolkit/shard"
)

// stack is what every contender offers: put a pointer, take one back.
type stack interface {
	push(*int)
	pop() *int
}

type localStack struct{ l *shard.Local[*int] }

func (s localStack) push(x *int) { s.l.Push(x) }
func (s localStack) pop() *int   { x, _ := s.l.Pop(); return x }

type stealStack struct{ s *shard.Stealable[int] }

func (s stealStack) push(x *int) { s.s.Push(x) }
func (s stealStack) pop() *int   { return s.s.Pop() }

// syncPool is the floor a Go programmer reaches for first.
type syncPool struct{ p *sync.Pool }

func (s syncPool) push(x *int) { s.p.Put(x) }
func (s syncPool) pop() *int {
	x, _ := s.p.Get().(*int)
	return x
}

type mutexStack struct {
	mu    sync.Mutex
	items []*int
}

func (s *mutexStack) push(x *int) {
	s.mu.Lock()
	if len(s.items) < cap(s.items) {
		s.items = append(s.items, x)
	}
	s.mu.Unlock()
}

func (s *mutexStack) pop() *int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.items) == 0 {
		return nil
	}
	x := s.items[len(s.items)-1]
	s.items[len(s.items)-1] = nil
	s.items = s.items[:len(s.items)-1]
	return x
}

type chanStack struct{ c chan *int }

func (s chanStack) push(x *int) {
	select {
	case s.c <- x:
	default:
	}
}

func (s chanStack) pop() *int {
	select {
	case x := <-s.c:
		return x
	default:
		return nil
	}
}

var contenders = []struct {
	name string
	make func() stack
}{
	{"Local", func() stack { return localStack{shard.NewLocal[*int](8, nil)} }},
	{"Stealable", func() stack { return stealStack{shard.NewStealable[int](8)} }},
	{"SyncPool", func() stack { return syncPool{&sync.Pool{}} }},
	{"Mutex", func() stack { return &mutexStack{items: make([]*int, 0, 64)} }},
	{"Chan", func() stack { return chanStack{make(chan *int, 64)} }},
}

// BenchmarkPushPop is push then pop of one pointer by one goroutine: the
// per-operation cost of each kind of storage, with nothing contended.
func BenchmarkPushPop(b *testing.B) {
	for _, c := range contenders {
		b.Run("Impl="+c.name, func(b *testing.B) {
			s := c.make()
			x := new(int)
			b.ReportAllocs()
			for b.Loop() {
				s.push(x)
				if s.pop() == nil {
					x = new(int) // a miss: count it as the allocation it costs
				}
			}
		})
	}
}

// BenchmarkPushPopParallel is the same from GOMAXPROCS goroutines at once.
func BenchmarkPushPopParallel(b *testing.B) {
	for _, c := range contenders {
		b.Run("Impl="+c.name, func(b *testing.B) {
			s := c.make()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				x := new(int)
				for pb.Next() {
					s.push(x)
					if x = s.pop(); x == nil {
						x = new(int)
					}
				}
			})
		})
	}
}
