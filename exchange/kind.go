package exchange

import "fmt"

// Kind names one of the implementations, for configurations that let their
// user choose (pool.Config.Exchange, bytepool.Config.Exchange).
type Kind int

const (
	// KindRing is the lock-free bounded ring, [Ring]. The zero [Kind].
	KindRing Kind = iota
	// KindMutex is the mutex-guarded ring, [Mutex].
	KindMutex
	// KindNone turns the exchange off, [None].
	KindNone
)

// String returns "ring", "mutex" or "none".
func (k Kind) String() string {
	switch k {
	case KindRing:
		return "ring"
	case KindMutex:
		return "mutex"
	case KindNone:
		return "none"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Valid reports whether k is one of the declared kinds.
func (k Kind) Valid() bool { return k >= KindRing && k <= KindNone }

// New returns an exchange of kind k that holds at least capacity values
// (capacity is ignored for [KindNone]). It panics, with an "exchange: " message,
// if k is not Valid or capacity < 1 for a bounded kind.
func New[T any](k Kind, capacity int) Exchange[T] {
	switch k {
	case KindRing:
		return NewRing[T](capacity)
	case KindMutex:
		return NewMutex[T](capacity)
	case KindNone:
		return None[T]{}
	}
	panic(fmt.Sprintf("exchange: New: unknown Kind %d", int(k)))
}
