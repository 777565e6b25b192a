package shard_test

import (
	"sync"
	"testing"

	"github.com/poolkit/poolkit/shard"
)

// The contenders are called directly, not through an interface, so that each
// row measures the storage and nothing else. A miss allocates, as a real user
// of the storage would.

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

type chanStack chan *int

func (c chanStack) push(x *int) {
	select {
	case c <- x:
	default:
	}
}

func (c chanStack) pop() *int {
	select {
	case x := <-c:
		return x
	default:
		return nil
	}
}

// pushPop returns one push+pop loop body per contender, for one goroutine's use.
func pushPop() map[string]func() func(x *int) *int {
	return map[string]func() func(x *int) *int{
		"Local": func() func(x *int) *int {
			l := shard.NewLocal[*int](8, nil)
			return func(x *int) *int {
				l.Push(x)
				if y, ok := l.Pop(); ok {
					return y
				}
				return new(int)
			}
		},
		"SyncPool": func() func(x *int) *int {
			p := new(sync.Pool)
			return func(x *int) *int {
				p.Put(x)
				if y, ok := p.Get().(*int); ok {
					return y
				}
				return new(int)
			}
		},
		"Mutex": func() func(x *int) *int {
			s := &mutexStack{items: make([]*int, 0, 64)}
			return func(x *int) *int {
				s.push(x)
				if y := s.pop(); y != nil {
					return y
				}
				return new(int)
			}
		},
		"Chan": func() func(x *int) *int {
			c := make(chanStack, 64)
			return func(x *int) *int {
				c.push(x)
				if y := c.pop(); y != nil {
					return y
				}
				return new(int)
			}
		},
	}
}

var implOrder = []string{"Local", "SyncPool", "Mutex", "Chan"}

// BenchmarkPushPop is push then pop of one pointer by one goroutine.
//
// Local and SyncPool are written out without a closure so that the
// call overhead of the harness does not blur the few nanoseconds they cost;
// Mutex and Chan go through the closures of pushPop.
func BenchmarkPushPop(b *testing.B) {
	b.Run("Impl=Local", func(b *testing.B) {
		l := shard.NewLocal[*int](8, nil)
		x := new(int)
		b.ReportAllocs()
		for b.Loop() {
			l.Push(x)
			if y, ok := l.Pop(); ok {
				x = y
			} else {
				x = new(int)
			}
		}
	})
	b.Run("Impl=SyncPool", func(b *testing.B) {
		var p sync.Pool
		x := new(int)
		b.ReportAllocs()
		for b.Loop() {
			p.Put(x)
			if y, ok := p.Get().(*int); ok {
				x = y
			} else {
				x = new(int)
			}
		}
	})
	for _, name := range implOrder[2:] {
		b.Run("Impl="+name, func(b *testing.B) {
			f := pushPop()[name]()
			x := new(int)
			b.ReportAllocs()
			for b.Loop() {
				x = f(x)
			}
		})
	}
}

// BenchmarkPushPopParallel is the same from GOMAXPROCS goroutines at once
// (RunParallel), each with its own pointer.
func BenchmarkPushPopParallel(b *testing.B) {
	for _, name := range implOrder {
		b.Run("Impl="+name, func(b *testing.B) {
			f := pushPop()[name]()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				x := new(int)
				for pb.Next() {
					x = f(x)
				}
			})
		})
	}
}
