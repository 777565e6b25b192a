package pool

import (
	"runtime"
	"time"

	"github.com/poolkit/poolkit/exchange"
	"github.com/poolkit/poolkit/internal/configerr"
	"github.com/poolkit/poolkit/internal/shard"
)

// defaultConnectTimeout bounds one Manager.Connect when
// [Config.ConnectTimeout] is zero.
const defaultConnectTimeout = 10 * time.Second

// defaultLocalDepth is the capacity of each per-P stack of idle objects
// (capped at MaxSize); with ExchangeNone it rises until the stacks hold
// MaxSize objects.
const defaultLocalDepth = 4

// Config configures a [Pool]. Zero values mean the documented defaults; New
// returns an error naming the field for any invalid value.
type Config struct {
	// Name names the pool in what it reports: the stock slog Observer's
	// lines carry it (pool=Name), timeout errors name it, and the exporters
	// (contrib/poolprom, contrib/poolotel) use it as the pool's label or
	// attribute when it is set (Pool.Name). "": unnamed.
	Name string
	// MaxSize bounds live objects: idle + leased + being connected + being
	// closed. Required, ≥ 1. It can be changed later with SetMaxSize. New
	// does the same work whatever its value: nothing is sized by it.
	MaxSize int
	// MinIdle is the number of idle objects the maintainer keeps connected
	// (within MaxSize, and capped at it after SetMaxSize lowers it);
	// MaxIdleTime never closes an idle object that would take the idle
	// count below it. 0 ≤ MinIdle ≤ MaxSize. Default 0.
	MinIdle int
	// MaxLifetime closes an object this long after it was connected, minus a
	// jitter drawn once per object in [0, LifetimeJitter). 0: no limit.
	MaxLifetime time.Duration
	// LifetimeJitter spreads lifetimes so that objects made together do not
	// expire together. 0 ≤ LifetimeJitter ≤ MaxLifetime.
	LifetimeJitter time.Duration
	// MaxIdleTime closes an object that has itself been idle this long (by
	// its last release), unless that would leave fewer than MinIdle idle;
	// the close comes within 600 ms of the limit, and an Acquire meanwhile
	// may still use the object, after Manager.Recycle. With it set, reuse goes to the most recently released
	// objects, so that those a smaller load no longer needs are closed:
	// after N concurrent users drop to k, the pool comes down to the k
	// objects in use and at most MinIdle idle beside them, within
	// MaxIdleTime plus 600 ms at most. 0: no limit.
	MaxIdleTime time.Duration
	// MaxUses closes an object after it has been handed out this many times.
	// 0: no limit.
	MaxUses int
	// AcquireTimeout bounds an Acquire that cannot be served at once by an
	// idle object, from the start of its slow path to its return: every
	// wait, connect and retry, and the check (Recycle) of the object handed
	// to it or made for it; the earlier of it and the context's deadline
	// applies. The check of an idle object found at once is bounded by
	// CheckTimeout instead. With AcquireTimeout set, an Acquire whose
	// connect fails tries again, after pauses of 10 ms doubling to 200 ms,
	// until an object is released to it, a connect succeeds, or its deadline
	// passes, and then returns the last connect error (matching the deadline
	// too): a server down for less than the deadline fails no Acquire
	// (decision 0010). 0: only the context, and a connect error ends the
	// Acquire.
	AcquireTimeout time.Duration
	// ConnectTimeout bounds one Manager.Connect. 0: 10s.
	ConnectTimeout time.Duration
	// MaxConnecting bounds concurrent Manager.Connect calls; the
	// maintainer's own connects (MinIdle) take at most half of them (at
	// least one), so that callers' connects always find room. 0: the
	// default, min(MaxSize, max(2, 2×GOMAXPROCS at New)).
	MaxConnecting int
	// Exchange selects where idle objects wait beyond each P's own few:
	// exchange.KindRing (the default, lock-free), exchange.KindMutex, or
	// exchange.KindNone (none: every idle object waits on a per-P stack).
	Exchange exchange.Kind

	// HealthCheckPeriod runs background checks: every period, each object
	// idle for at least the period is taken out of the idle set, checked
	// with Manager.Recycle (at most MaxConnecting checks at a time, each
	// bounded by CheckTimeout, or by the period when CheckTimeout is zero)
	// and given back, or closed if the check fails (then the maintainer
	// connects a replacement if fewer than MinIdle objects are idle). An
	// object under check is not handed out; acquirers take other objects,
	// connect, or wait as usual. A manager that skips Recycle
	// (see manager.Manager's Recycle) has nothing to check: no pass runs. 0: no
	// background checks.
	HealthCheckPeriod time.Duration
	// CheckTimeout bounds each Manager.Recycle call: on the acquire path it
	// further bounds the acquirer's context (a check cut by CheckTimeout
	// closes the object; one cut by the acquirer's context or AcquireTimeout
	// does not) — and it is what bounds the check of an idle object found at
	// once, which AcquireTimeout does not — and it bounds each background
	// health check. 0: no bound beyond the context.
	CheckTimeout time.Duration
	// LeakThreshold reports, once, a lease held longer than it, counted from
	// the moment the Acquire obtained it (time spent waiting in line is not
	// time held): through the Observer (with the stack of the Acquire that
	// took it) and in Stats.Leaks, within a few hundred milliseconds of the
	// threshold. Setting it makes every Acquire record its caller's stack (one
	// allocation per Acquire). 0: off.
	LeakThreshold time.Duration
	// MaxIdle caps idle objects, like database/sql's SetMaxIdleConns: an
	// object released (or given back) while MaxIdle objects are already
	// idle is closed instead (Stats.ClosedBy[CloseMaxIdle]). MinIdle ≤
	// MaxIdle. 0: no cap.
	MaxIdle int
	// Observer, if not nil, is told of acquires, connects, closes and leaks
	// (see Observer). nil: no calls and no cost.
	Observer Observer

	// localDepth is the capacity of each per-P stack: set by normalize
	// (tests set it through export_test.go).
	localDepth int
}

// fieldNames name, in a config error, the struct and the fields that a
// KeyedConfig calls by other names (see KeyedConfig.keyConfig).
type fieldNames struct {
	prefix                    string // "pool: Config."
	maxSize, minIdle, maxIdle string
}

var configNames = fieldNames{"pool: Config.", "MaxSize", "MinIdle", "MaxIdle"}

// normalize validates c and fills in the defaults.
func (c Config) normalize() (Config, error) { return c.normalizeAs(configNames) }

// normalizeAs is normalize with its errors naming the fields as n does.
func (c Config) normalizeAs(n fieldNames) (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, configerr.New(ErrInvalidConfig, n.prefix+format, args...)
	}
	switch {
	case c.MaxSize < 1:
		return bad("%s must be >= 1, got %d", n.maxSize, c.MaxSize)
	case c.MinIdle < 0 || c.MinIdle > c.MaxSize:
		return bad("%s must be in [0, %s=%d], got %d", n.minIdle, n.maxSize, c.MaxSize, c.MinIdle)
	case c.MaxLifetime < 0:
		return bad("MaxLifetime must be >= 0, got %v", c.MaxLifetime)
	case c.LifetimeJitter < 0 || c.LifetimeJitter > c.MaxLifetime:
		return bad("LifetimeJitter must be in [0, MaxLifetime=%v], got %v", c.MaxLifetime, c.LifetimeJitter)
	case c.MaxIdleTime < 0:
		return bad("MaxIdleTime must be >= 0, got %v", c.MaxIdleTime)
	case c.MaxUses < 0:
		return bad("MaxUses must be >= 0, got %d", c.MaxUses)
	case c.AcquireTimeout < 0:
		return bad("AcquireTimeout must be >= 0, got %v", c.AcquireTimeout)
	case c.ConnectTimeout < 0:
		return bad("ConnectTimeout must be >= 0, got %v", c.ConnectTimeout)
	case c.MaxConnecting < 0:
		return bad("MaxConnecting must be >= 0, got %d", c.MaxConnecting)
	case c.HealthCheckPeriod < 0:
		return bad("HealthCheckPeriod must be >= 0, got %v", c.HealthCheckPeriod)
	case c.CheckTimeout < 0:
		return bad("CheckTimeout must be >= 0, got %v", c.CheckTimeout)
	case c.LeakThreshold < 0:
		return bad("LeakThreshold must be >= 0, got %v", c.LeakThreshold)
	case c.MaxIdle < 0 || (c.MaxIdle > 0 && c.MaxIdle < c.MinIdle):
		return bad("%s must be 0 or in [%s=%d, ∞), got %d", n.maxIdle, n.minIdle, c.MinIdle, c.MaxIdle)
	case !c.Exchange.Valid():
		return bad("Exchange must be exchange.KindRing, KindMutex or KindNone, got %d", int(c.Exchange))
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = defaultConnectTimeout
	}
	if c.MaxConnecting == 0 {
		c.MaxConnecting = min(c.MaxSize, max(2, 2*runtime.GOMAXPROCS(0)))
	}
	if c.localDepth == 0 {
		c.localDepth = defaultLocalDepth
	}
	c.localDepth = min(c.localDepth, c.MaxSize)
	if c.Exchange == exchange.KindNone {
		// The per-P stacks must hold every object.
		procs := runtime.GOMAXPROCS(0)
		c.localDepth = max(c.localDepth, (c.MaxSize+procs-1)/procs)
		if c.localDepth > shard.MaxDepth {
			return bad("Exchange is exchange.KindNone but %s(%d) > %d × GOMAXPROCS(%d): the per-P stacks cannot hold every object",
				n.maxSize, c.MaxSize, shard.MaxDepth, procs)
		}
	}
	return c, nil
}
