package bytepool

import (
	"errors"
	"math/bits"
	"time"

	"github.com/poolkit/poolkit/exchange"
	"github.com/poolkit/poolkit/internal/configerr"
	"github.com/poolkit/poolkit/internal/shard"
)

// Defaults applied by New to the zero fields of a Config.
const (
	// DefaultMinSize is the smallest size class: 64 bytes, a small message.
	DefaultMinSize = 64
	// DefaultMaxSize is the largest size class: 16 MiB, a large frame.
	// Get above it returns a plain allocation that is not pooled.
	DefaultMaxSize = 16 << 20
	// DefaultDepth is the number of buffers of one class one P may keep on
	// its stack.
	DefaultDepth = 8
	// DefaultSpill is the number of buffers of one class one P may keep in
	// its spill, behind the stack. The budget lowers it for large classes.
	DefaultSpill = 128
	// DefaultExchangeCapacity is the number of buffers of one class the
	// shared exchange may keep.
	DefaultExchangeCapacity = 64
	// DefaultMaxRetained is the byte budget of a pool: 256 MiB.
	DefaultMaxRetained = 256 << 20
	// DefaultIdleTimeout is how long a tier of a class may go without reuse
	// before the next GC cycle releases it.
	DefaultIdleTimeout = time.Minute
	// DefaultIdleCycles is the number of consecutive GC cycles a tier of a
	// class may go without reuse before it is released.
	DefaultIdleCycles = 2
)

// maxClassSize bounds Config.MaxSize.
const maxClassSize = 1 << 30

// ErrInvalidConfig is matched (errors.Is) by every error New returns for a
// bad Config; the error's message names the field.
var ErrInvalidConfig = errors.New("bytepool: invalid config")

// ExchangeKind selects the shared reservoir each size class uses between the
// per-P stacks. It is exchange.Kind: one choice, shared with pool.
type ExchangeKind = exchange.Kind

const (
	// ExchangeRing is the lock-free bounded ring (exchange.Ring). Default.
	ExchangeRing = exchange.KindRing
	// ExchangeMutex is the mutex-guarded ring (exchange.Mutex).
	ExchangeMutex = exchange.KindMutex
	// ExchangeNone switches the reservoir off: a buffer that does not fit on
	// the calling P's stack or spill is dropped.
	ExchangeNone = exchange.KindNone
)

// Config configures a Pool. The zero value is valid: every zero field takes
// its default.
type Config struct {
	// MinSize is the smallest size class, a power of two. Get(n) for
	// n <= MinSize returns a MinSize buffer; Put drops slices with a smaller
	// capacity. Default DefaultMinSize.
	MinSize int
	// MaxSize is the largest size class, a power of two >= MinSize and
	// <= 1 GiB. Get(n) for n > MaxSize returns a plain make([]byte, n) that
	// is not pooled. Default DefaultMaxSize.
	MaxSize int
	// Depth is the most buffers of one class one P may keep on its stack,
	// the owner-only first tier, in [1, shard.MaxDepth]. The budget may lower
	// it for large classes. Default DefaultDepth.
	Depth int
	// Spill is the most buffers of one class one P may keep in its spill,
	// the per-P second tier that other Ps steal from (see Pool), at most
	// shard.MaxDepth; it is rounded down to a power of two, and the budget
	// may lower it for large classes. 0 means DefaultSpill; negative means
	// no spill.
	Spill int
	// ExchangeCapacity is the most buffers of one class the shared exchange
	// may keep. The budget may lower it for large classes, and it is rounded
	// down to a power of two. Default DefaultExchangeCapacity. Ignored with
	// ExchangeNone.
	ExchangeCapacity int
	// Exchange selects the shared reservoir. Default ExchangeRing.
	Exchange ExchangeKind
	// MaxRetained is the byte budget: the most bytes the pool keeps for
	// reuse, counted in class sizes, for GOMAXPROCS as it was when New ran
	// (see Pool for how it is split). Default DefaultMaxRetained.
	MaxRetained int64
	// IdleTimeout: a tier of a class (its per-P stacks, or its exchange)
	// that has served no Get for this long is released at the next GC cycle.
	// Default DefaultIdleTimeout; negative disables the time rule.
	IdleTimeout time.Duration
	// IdleCycles: a tier that has served no Get during this many consecutive
	// GC cycles, and for at least one second (so that a burst of allocation
	// that runs several cycles in a row does not empty a pool in use), is
	// released. Default DefaultIdleCycles; negative disables the cycle rule.
	IdleCycles int
	// ZeroOnPut zeroes every buffer Put files for reuse (its whole class
	// size), so no later Get sees what an earlier holder wrote. Buffers that
	// are dropped are not zeroed.
	ZeroOnPut bool
	// Allocator makes and frees class buffers on the cold path. Default
	// (nil): the Go heap.
	Allocator Allocator
}

// invalid returns the error New returns for a bad field; format starts with
// the field's name.
func invalid(format string, args ...any) error {
	return configerr.New(ErrInvalidConfig, "bytepool: Config."+format, args...)
}

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// withDefaults validates c and fills in its zero fields.
func (c Config) withDefaults() (Config, error) {
	if c.MinSize == 0 {
		c.MinSize = DefaultMinSize
	}
	if c.MaxSize == 0 {
		c.MaxSize = max(DefaultMaxSize, c.MinSize)
	}
	if c.Depth == 0 {
		c.Depth = DefaultDepth
	}
	if c.Spill == 0 {
		c.Spill = DefaultSpill
	}
	if c.ExchangeCapacity == 0 {
		c.ExchangeCapacity = DefaultExchangeCapacity
	}
	if c.MaxRetained == 0 {
		c.MaxRetained = DefaultMaxRetained
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.IdleCycles == 0 {
		c.IdleCycles = DefaultIdleCycles
	}
	if c.Allocator == nil {
		c.Allocator = Heap{}
	}
	switch {
	case !isPow2(c.MinSize):
		return c, invalid("MinSize %d is not a positive power of two", c.MinSize)
	case !isPow2(c.MaxSize) || c.MaxSize > maxClassSize:
		return c, invalid("MaxSize %d is not a power of two in [1, 1 GiB]", c.MaxSize)
	case c.MaxSize < c.MinSize:
		return c, invalid("MaxSize %d is below MinSize %d", c.MaxSize, c.MinSize)
	case c.Depth < 1 || c.Depth > shard.MaxDepth:
		return c, invalid("Depth %d is outside [1, %d]", c.Depth, shard.MaxDepth)
	case c.Spill > shard.MaxDepth:
		return c, invalid("Spill %d is above %d", c.Spill, shard.MaxDepth)
	case c.ExchangeCapacity < 1 || c.ExchangeCapacity > 1<<20:
		return c, invalid("ExchangeCapacity %d is outside [1, 1<<20]", c.ExchangeCapacity)
	case !c.Exchange.Valid():
		return c, invalid("Exchange %d is not an ExchangeKind", c.Exchange)
	case c.MaxRetained < 0:
		return c, invalid("MaxRetained %d is negative", c.MaxRetained)
	}
	return c, nil
}

// plan is the retention plan of one class: per-P stack depth (0: no per-P
// tiers), per-P spill (0: none; a power of two) and exchange capacity (0: no
// exchange; a power of two).
type plan struct {
	size, depth, spill, exCap int
}

// split divides the byte budget among the classes. Each class wants
// ((Depth+Spill)×procs + ExchangeCapacity) buffers. Classes are served from
// the smallest up, each getting at most an equal share of what is left, so
// what a small class cannot use passes to the larger ones (water filling). A
// class's buffers go to its per-P stacks first (up to Depth per P), then to
// its per-P spills (up to Spill per P), the rest to its exchange; spill and
// exchange are rounded down to powers of two. The sum of
// ((depth+spill)×procs + exCap)×size over the classes never exceeds the
// budget.
func split(c Config, procs int) []plan {
	n := bits.Len(uint(c.MaxSize)) - bits.Len(uint(c.MinSize)) + 1
	plans := make([]plan, n)
	remaining := c.MaxRetained
	spillWant := max(c.Spill, 0)
	exWant := c.ExchangeCapacity
	if c.Exchange == ExchangeNone {
		exWant = 0
	}
	for i := range plans {
		size := c.MinSize << i
		share := remaining / int64(n-i)
		want := int64((c.Depth+spillWant)*procs+exWant) * int64(size)
		slots := int(min(share, want) / int64(size))
		depth := min(c.Depth, slots/procs)
		spill := 0
		if depth > 0 {
			spill = floorPow2(min(spillWant, (slots-depth*procs)/procs))
		}
		exCap := floorPow2(min(exWant, slots-(depth+spill)*procs))
		plans[i] = plan{size: size, depth: depth, spill: spill, exCap: exCap}
		remaining -= int64((depth+spill)*procs+exCap) * int64(size)
	}
	return plans
}

// floorPow2 returns the largest power of two <= n, or 0 if n < 1.
func floorPow2(n int) int {
	if n < 1 {
		return 0
	}
	return 1 << (bits.Len(uint(n)) - 1)
}
