// Package contenders holds everything the benchmarks compare, behind two small
// interfaces: Pool (an object pool of *Conn) and Bytes (a byte-buffer pool).
// The Go benchmarks of package benches and the poolbench command run the same
// adapters, so a figure from one can be checked with the other.
//
// Every contender is reached through an interface call, so each pays the same
// few nanoseconds of dispatch; the comparison is fair, the absolute figures
// are a little above what a direct call would give.
package contenders

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/poolkit/poolkit/benches/internal/cacheline"
)

// Conn stands in for a pooled connection: a heap object of a cache line that
// the holder touches once per lease.
type Conn struct {
	Uses uint64
	_    [56]byte
}

// PoolConfig is what the object-pool benchmarks vary. A contender that has no
// such setting ignores it (see the contender's doc).
type PoolConfig struct {
	// MaxSize bounds live objects. Required (sync.Pool ignores it).
	MaxSize int
	// AcquireTimeout bounds every wait, through the contender's own setting;
	// 0: none. Contenders without such a setting (puddle, sync.Pool)
	// ignore it: TimeoutArmed/Via=Context arms theirs per call instead.
	AcquireTimeout time.Duration
	// Exchange selects poolkit's shared reservoir: "ring" (default),
	// "mutex" or "none". Others ignore it.
	Exchange string
	// Observer sets poolkit's Config.Observer: "" none, "nop"
	// (pool.NopObserver), "slog" (pool.NewSlogObserver at the default Info
	// level, writing to io.Discard: a quick Acquire logs nothing). Others
	// ignore it.
	Observer string
	// LeakThreshold sets poolkit's Config.LeakThreshold. Others ignore it.
	LeakThreshold time.Duration
}

// Pool is an object pool under test.
type Pool interface {
	// Cycle acquires an object, touches it and releases it. ctx bounds the
	// acquire as the contender allows.
	Cycle(ctx context.Context) error
	// Holder returns a set of n slots for one goroutine, to keep several
	// objects out at once so that they spill past a per-P stack.
	Holder(n int) Holder
	// Close releases everything the pool holds and stops its goroutines.
	Close()
}

// Holder keeps objects out of a Pool; it belongs to one goroutine.
//
// A holder is written on every op, and the workers' holders are made one
// after the other: each is padded (cacheline.Pad before and after its
// fields), and its slots cut with the same margins (holderSlots), so that no
// two workers' holders share a cache line. Small holders made side by side did, and every op of every
// contender then paid for the line moving between two processors
// (TestHoldersShareNoCacheLine).
type Holder interface {
	// AcquireAll fills every slot. On error the slots filled so far are
	// released.
	AcquireAll(ctx context.Context) error
	// ReleaseAll empties every slot.
	ReleaseAll()
}

// StatsReader is implemented by the contenders that keep statistics; the
// StatsOverhead benchmarks call ReadStats from a goroutine of their own.
type StatsReader interface{ ReadStats() }

// PoolContender names an object pool and makes instances of it.
type PoolContender struct {
	Name string
	New  func(PoolConfig) (Pool, error)
}

// Pools returns the object-pool contenders: poolkit (its manager has no
// check: manager.Funcs without a RecycleFunc, which the pool skips), poolkit
// with a check on every reuse (a RecycleFunc that returns nil: the cost of
// the Recycle contract), poolkit's keyed pool through one key (the cost of
// the key) without and with that check, puddle, a channel pool, a
// mutex-guarded slice, and
// sync.Pool as the floor (not a real pool: no maximum, the GC empties it).
func Pools() []PoolContender {
	return []PoolContender{
		{Name: "poolkit", New: newPoolkitPool},
		{Name: "poolkit-recycle", New: newPoolkitRecyclePool},
		{Name: "poolkit-keyed", New: newPoolkitKeyedPool},
		{Name: "poolkit-keyed-recycle", New: newPoolkitKeyedRecyclePool},
		{Name: "puddle", New: newPuddlePool},
		{Name: "chan", New: newChanPool},
		{Name: "mutex", New: newMutexPool},
		{Name: "syncpool", New: newSyncPool},
	}
}

// PoolByName returns the contender called name.
func PoolByName(name string) (PoolContender, error) {
	for _, c := range Pools() {
		if c.Name == name {
			return c, nil
		}
	}
	return PoolContender{}, fmt.Errorf("contenders: no object pool %q", name)
}

// ErrTimeout is what the reference pools return when a wait times out.
var ErrTimeout = errors.New("contenders: acquire timed out")

// Buf is a buffer handed out by a Bytes pool. B is the buffer, len n; ref is
// the contender's handle for returning it (a pointer, so no allocation; nil
// when there is none).
//
// Buf is four words on purpose: the compiler keeps a struct of at most four
// words in registers, but copies a larger one through the stack with 16-byte
// moves that reload 8-byte stores, a store-forwarding stall of a few ns that
// every op of the harness paid (with ref an interface, five words).
type Buf struct {
	B   []byte
	ref unsafe.Pointer
}

// BytesConfig is what the byte-pool benchmarks vary.
type BytesConfig struct {
	// Depth is poolkit's per-P depth per size class; 0: its default.
	// Others ignore it.
	Depth int
	// Sizes lists the buffer sizes the workload uses; the sync.Pool
	// contender makes one pool per size. Others ignore it.
	Sizes []int
}

// Bytes is a byte-buffer pool under test.
type Bytes interface {
	// Get returns a buffer of length n; its contents are unspecified.
	Get(n int) Buf
	// Put returns b; b must not be used afterwards.
	Put(b Buf)
	// Close releases what the pool keeps.
	Close()
}

// BytesContender names a byte pool and makes instances of it.
type BytesContender struct {
	Name string
	New  func(BytesConfig) (Bytes, error)
}

// ByteContenders returns the byte-pool contenders: poolkit's bytepool, plain
// make, one sync.Pool of *[]byte per size, libp2p/go-buffer-pool and
// valyala/bytebufferpool.
func ByteContenders() []BytesContender {
	return []BytesContender{
		{Name: "poolkit", New: newPoolkitBytes},
		{Name: "make", New: newMakeBytes},
		{Name: "syncpool", New: newSyncBytes},
		{Name: "gobufferpool", New: newGoBufferPool},
		{Name: "bytebufferpool", New: newByteBufferPool},
	}
}

// BytesByName returns the contender called name.
func BytesByName(name string) (BytesContender, error) {
	for _, c := range ByteContenders() {
		if c.Name == name {
			return c, nil
		}
	}
	return BytesContender{}, fmt.Errorf("contenders: no byte pool %q", name)
}

// holderSlots returns an empty slice of capacity n with a cache line pair of
// unused memory before and after its elements.
func holderSlots[E any](n int) []E { return cacheline.Carve[E](1, n)[0][:0] }
