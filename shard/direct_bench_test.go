package shard_test

import (
	"sync"
	"testing"

	"github.com/poolkit/poolkit/shard"
)

func BenchmarkDirect(b *testing.B) {
	b.Run("Impl=Local", func(b *testing.B) {
		l := shard.NewLocal[*int](8, nil)
		x := new(int)
		for b.Loop() {
			l.Push(x)
			x, _ = l.Pop()
		}
	})
	b.Run("Impl=Stealable", func(b *testing.B) {
		l := shard.NewStealable[int](8)
		x := new(int)
		for b.Loop() {
			l.Push(x)
			x = l.Pop()
		}
	})
	b.Run("Impl=SyncPool", func(b *testing.B) {
		var p sync.Pool
		x := new(int)
		for b.Loop() {
			p.Put(x)
			if y, ok := p.Get().(*int); ok { x = y }
		}
	})
}
