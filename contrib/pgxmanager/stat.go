package pgxmanager

import (
	"time"

	"github.com/poolkit/poolkit/pool"
)

// Stat is a snapshot of a Pool's statistics under pgxpool.Stat's method
// names and types, read from pool.Stats (Pool.Stats has them all, and more),
// so that code and dashboards written against pgxpool.Stat carry over. Where
// pool.Stats counts differently, the method says what it returns.
type Stat struct {
	s       pool.Stats
	retries int64
	forced  uint64
}

// AcquireCount returns the cumulative count of successful acquires.
func (s *Stat) AcquireCount() int64 { return int64(s.s.Acquires) }

// AcquireDuration returns the total time of the acquires that could not be
// served at once (they connected or waited; pool.Stats.BlockedTime),
// whatever their outcome; the others took an idle connection and add
// nothing worth timing.
func (s *Stat) AcquireDuration() time.Duration { return s.s.BlockedTime }

// AcquiredConns returns the number of connections leased now.
func (s *Stat) AcquiredConns() int32 { return int32(s.s.Leased) }

// CanceledAcquireCount returns the cumulative count of acquires ended by
// their context or by an acquire timeout (pool.Stats.Cancels + Timeouts).
func (s *Stat) CanceledAcquireCount() int64 { return int64(s.s.Cancels + s.s.Timeouts) }

// ConstructingConns returns the number of connects in progress.
func (s *Stat) ConstructingConns() int32 { return int32(s.s.Connecting) }

// EmptyAcquireCount returns the cumulative count of acquires that found no
// idle connection and connected or waited (pool.Stats.Blocked), whatever
// their outcome.
func (s *Stat) EmptyAcquireCount() int64 { return int64(s.s.Blocked) }

// EmptyAcquireWaitTime returns the cumulative time of the acquires
// EmptyAcquireCount counts (pool.Stats.BlockedTime).
func (s *Stat) EmptyAcquireWaitTime() time.Duration { return s.s.BlockedTime }

// IdleConns returns the number of idle connections now.
func (s *Stat) IdleConns() int32 { return int32(s.s.Idle) }

// MaxConns returns the pool's maximum size.
func (s *Stat) MaxConns() int32 { return int32(s.s.MaxSize) }

// TotalConns returns the number of connections now: connecting, leased and
// idle (pool.Stats.Live without those being closed, which still hold their
// slots).
func (s *Stat) TotalConns() int32 { return int32(s.s.Live - s.s.Closing) }

// NewConnsCount returns the cumulative count of connects attempted.
func (s *Stat) NewConnsCount() int64 { return int64(s.s.Connects) }

// MaxLifetimeDestroyCount returns the cumulative count of connections
// closed for their lifetime (pool.Stats.ClosedBy[pool.CloseLifetime]).
func (s *Stat) MaxLifetimeDestroyCount() int64 { return int64(s.s.ClosedBy[pool.CloseLifetime]) }

// MaxIdleDestroyCount returns the cumulative count of connections closed
// for their idle time (pool.Stats.ClosedBy[pool.CloseIdle]).
func (s *Stat) MaxIdleDestroyCount() int64 { return int64(s.s.ClosedBy[pool.CloseIdle]) }

// RetryCount returns the cumulative count of queries retried on another
// connection after failing before anything of them reached the server (see
// Pool).
func (s *Stat) RetryCount() int64 { return s.retries }

// ForcedCloseCount returns the cumulative count of closes that closed the
// socket before the server had let go (see Manager.Close); 0 for a Pool made by
// NewPool, whose Manager it does not know.
func (s *Stat) ForcedCloseCount() int64 { return int64(s.forced) }
