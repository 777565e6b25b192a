package bytepool

import (
	"sync"
	"sync/atomic"
)

var (
	defaultPool atomic.Pointer[Pool]
	defaultOnce sync.Once
)

// Default returns the package default pool, used by the package-level Get
// and Put and by a zero [Buffer]. It is made on first use with the zero [Config]
// (all defaults). Like every [Pool] it starts no goroutine: its idle trimming
// rides on GC cycles.
func Default() *Pool {
	if p := defaultPool.Load(); p != nil {
		return p
	}
	defaultOnce.Do(func() {
		p, err := New(Config{})
		if err != nil {
			panic("bytepool: bug: default config rejected: " + err.Error())
		}
		defaultPool.Store(p)
	})
	return defaultPool.Load()
}

// Get is Default().Get(n).
func Get(n int) []byte { return Default().Get(n) }

// Put is Default().Put(b).
func Put(b []byte) { Default().Put(b) }
