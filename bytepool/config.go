package bytepool

import (
	"errors"
	"math/bits"
	"time"

	"github.com/poolkit/poolkit/exchange"
	"github.com/poolkit/poolkit/internal/configerr"
	"github.com/poolkit/poolkit/internal/shard"
)

// Defaults applied by New to the zero fields of a [Config].
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
	// its spill, behind the stack, if demand asks for them and the budget
	// has room: shard.MaxDepth.
	DefaultSpill = shard.MaxDepth
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

// minClassSize and maxClassSize bound Config.MinSize and Config.MaxSize. A
// power of two 2^k is divided into quarters of 2^(k-2) bytes: 8 is the
// least that divides into whole bytes above it.
const (
	minClassSize = 8
	maxClassSize = 1 << 30
)

// ErrInvalidConfig is matched ([errors.Is]) by every error New returns for a
// bad [Config]; the error's message names the field.
var ErrInvalidConfig = errors.New("bytepool: invalid config")

// ExchangeKind selects the shared reservoir each size class uses between the
// per-P stacks. It is [exchange.Kind]: one choice, shared with pool.
type ExchangeKind = exchange.Kind

const (
	// ExchangeRing is the lock-free bounded ring ([exchange.Ring]). The default.
	ExchangeRing = exchange.KindRing
	// ExchangeMutex is the mutex-guarded ring ([exchange.Mutex]).
	ExchangeMutex = exchange.KindMutex
	// ExchangeNone switches the reservoir off: a buffer that does not fit on
	// the calling P's stack or spill is dropped.
	ExchangeNone = exchange.KindNone
)

// Config configures a [Pool]. The zero value is valid: every zero field takes
// its default.
type Config struct {
	// MinSize is the smallest size class, a power of two of at least 8.
	// Get(n) for n <= MinSize returns a MinSize buffer; Put drops slices
	// with a smaller capacity. Above it, each power of two 2^k up to MaxSize
	// is divided into four classes, 2^k × 5/4, 6/4, 7/4 and 8/4. Default
	// DefaultMinSize.
	MinSize int
	// MaxSize is the largest size class, a power of two >= MinSize and
	// <= 1 GiB. Get(n) for n > MaxSize returns a plain make([]byte, n) that
	// is not pooled. Default DefaultMaxSize.
	MaxSize int
	// Depth is the most buffers of one class one P may keep on its stack,
	// the owner-only first tier, in [1, shard.MaxDepth]. A class's stacks
	// start with no room and grow to it as Puts find them full, as far as
	// the budget allows (see Pool). Default DefaultDepth.
	Depth int
	// Spill is the most buffers of one class one P may keep in its spill,
	// the per-P second tier that other Ps steal from (see Pool), at most
	// shard.MaxDepth, rounded down to a power of two. Spills grow to it,
	// after the stacks, as demand asks and the budget allows. 0 means
	// DefaultSpill; negative means no spill.
	Spill int
	// ExchangeCapacity is the most buffers of one class the shared exchange
	// may keep. It is rounded down to a power of two, and lowered for large
	// classes: the exchanges of all classes share a quarter of MaxRetained.
	// Default DefaultExchangeCapacity. Ignored with ExchangeNone.
	ExchangeCapacity int
	// Exchange selects the shared reservoir. Default ExchangeRing.
	Exchange ExchangeKind
	// MaxRetained is the byte budget: the most bytes the pool keeps for
	// reuse, counted in class sizes (see Pool for how the classes share
	// it). Default DefaultMaxRetained.
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
	case !isPow2(c.MinSize) || c.MinSize < minClassSize:
		return c, invalid("MinSize %d is not a power of two >= %d", c.MinSize, minClassSize)
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

// plan is what New reserves for one class: its size and its exchange
// capacity (0: no exchange; a power of two). Per-P tiers are not planned:
// they grow on demand (see grow).
type plan struct {
	size, exCap int
}

// exchangeShare is the part of MaxRetained the exchanges may reserve; the
// rest is left to the per-P tiers, which take it as demand comes.
const exchangeShare = 4 // a quarter

// split divides a quarter of the byte budget among the classes' exchanges.
// Each class wants ExchangeCapacity buffers. Classes are served from the
// smallest up, each getting at most an equal share of what is left, so what
// a small class cannot use passes to the larger ones (water filling); a
// capacity is rounded down to a power of two. The sum of exCap×size over the
// classes never exceeds MaxRetained/4.
func split(c Config) []plan {
	sizes := classSizes(c.MinSize, c.MaxSize)
	n := len(sizes)
	plans := make([]plan, n)
	remaining := c.MaxRetained / exchangeShare
	exWant := c.ExchangeCapacity
	if c.Exchange == ExchangeNone {
		exWant = 0
	}
	for i, size := range sizes {
		share := remaining / int64(n-i)
		exCap := floorPow2(int(min(share/int64(size), int64(exWant))))
		plans[i] = plan{size: size, exCap: exCap}
		remaining -= int64(exCap) * int64(size)
	}
	return plans
}

// classSizes returns the class sizes from lo to hi, powers of two both:
// lo, then four classes per power of two, 2^k × 5/4, 6/4, 7/4 and 8/4.
func classSizes(lo, hi int) []int {
	sizes := []int{lo}
	for k := lo; k < hi; k *= 2 {
		for q := 5; q <= 8; q++ {
			sizes = append(sizes, k/4*q)
		}
	}
	return sizes
}

// floorPow2 returns the largest power of two <= n, or 0 if n < 1.
func floorPow2(n int) int {
	if n < 1 {
		return 0
	}
	return 1 << (bits.Len(uint(n)) - 1)
}
