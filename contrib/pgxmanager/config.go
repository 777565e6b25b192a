package pgxmanager

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/poolkit/poolkit/pool"
)

// pgxpool's defaults, which Open and OpenConfig give the zero fields of the
// pool's configuration (PoolConfig.Pool), and OpenKeyed a KeyedPool's (see
// PoolConfig, where the docs give the values).
const (
	defaultMaxLifetime       = time.Hour
	defaultMaxIdleTime       = 30 * time.Minute
	defaultHealthCheckPeriod = time.Minute
)

// defaultMaxSize is pgxpool's MaxConns default, which a zero
// PoolConfig.Pool.MaxSize gets.
func defaultMaxSize() int { return max(4, runtime.NumCPU()) }

// Options are the facade's own settings: they act on acquires and queries
// made through a Pool, not on the connections' lives.
type Options struct {
	// PrepareConn, if set, runs on each connection the Pool's Acquire (and
	// every query method) takes from the pool, before using it, with
	// pgxpool's meanings: (true, nil) uses it; (false, nil) destroys it and
	// takes another; (true, err) gives it back and fails the call with err;
	// (false, err) destroys it and fails the call with err. After MaxSize+1
	// refusals in one call, the call fails. A panic destroys the connection
	// and goes on to the caller.
	PrepareConn func(ctx context.Context, c *pgx.Conn) (bool, error)
	// BeforeAcquire is PrepareConn without an error: false destroys the
	// connection and takes another.
	//
	// Deprecated: use PrepareConn, which takes precedence when both are set
	// (as in pgxpool).
	BeforeAcquire func(ctx context.Context, c *pgx.Conn) bool
	// DisableRetry turns off the retry of a query that failed before
	// anything of it reached the server (see Pool): by default such a query
	// is retried once on another connection.
	DisableRetry bool
}

// PoolConfig is what OpenConfig opens a Pool with: the Manager's Config,
// the facade's Options and the pool's configuration, side by side as
// pgxpool.Config holds them (cfg.ConnConfig, cfg.AfterConnect, cfg.PrepareConn
// read as they do there; pgxpool's MaxConns is cfg.Pool.MaxSize).
//
// In Pool, a zero field means pgxpool's default for MaxSize (the greater
// of 4 and runtime.NumCPU()), MaxLifetime (1 h), MaxIdleTime (30 min) and
// HealthCheckPeriod (1 min), and pool.Config's default for the others; a
// negative MaxLifetime, MaxIdleTime or HealthCheckPeriod means none (no
// lifetime limit, no idle limit, no background health checks).
//
// A PoolConfig from ParsePoolConfig or Pool.Config shows these three as
// pgxpool.Config would: a 0 there that the connection string gave (or that
// Config reports for a pool without that limit) keeps pgxpool's meaning as
// long as it is left 0: no lifetime limit, no idle connection kept beyond
// MinIdle, no health checks. Any other 0 is a default.
type PoolConfig struct {
	Config
	Options
	Pool pool.Config

	// zeros are the fields of Pool whose 0 is pgxpool's, not a default.
	zeros pgxZeros
}

// pgxZeros is a set of fields of a PoolConfig's Pool whose 0 has pgxpool's
// meaning: those ParsePoolConfig read as 0 from the connection string, and
// those Pool.Config reports as 0 for a pool without that limit.
type pgxZeros uint8

const (
	zeroLifetime    pgxZeros = 1 << iota // MaxLifetime: no lifetime limit
	zeroIdleTime                         // MaxIdleTime: no idle connection kept beyond MinIdle
	zeroHealthCheck                      // HealthCheckPeriod: no health checks
)

// Copy returns a copy of c whose ConnConfig is a copy too (pgx.ConnConfig's
// Copy: the TLS configuration is shared).
func (c *PoolConfig) Copy() *PoolConfig {
	n := *c
	if c.ConnConfig != nil {
		n.ConnConfig = c.ConnConfig.Copy()
	}
	return &n
}

// ConnString returns the connection string ConnConfig was parsed from.
func (c *PoolConfig) ConnString() string {
	if c.ConnConfig == nil {
		return ""
	}
	return c.ConnConfig.ConnString()
}

// ParsePoolConfig parses a connection string as pgxpool.ParseConfig does:
// pgx.ParseConfig's parameters, plus pgxpool's pool parameters, which it
// removes from the run-time parameters sent to the server (PostgreSQL
// refuses a connection that sets a parameter it does not know):
//
//   - pool_max_conns: integer > 0: Pool.MaxSize (default the greater of 4
//     and runtime.NumCPU()).
//   - pool_min_conns, pool_min_idle_conns: integers >= 0: Pool.MinIdle is
//     the greater of the two (the pool keeps that many connections idle,
//     which also keeps that many open).
//   - pool_max_conn_lifetime: duration: a connection's lifetime (default 1
//     h; 0: none).
//   - pool_max_conn_lifetime_jitter: duration (default 0): pgxpool closes a
//     connection at a random moment up to this long after its lifetime;
//     pool.Config takes its jitter off within MaxLifetime, so the pair maps
//     to Pool.MaxLifetime = lifetime + jitter and Pool.LifetimeJitter =
//     jitter, which gives the same lifetimes. A program that sets
//     Pool.MaxLifetime itself sets LifetimeJitter with it (Open does: see
//     Open).
//   - pool_max_conn_idle_time: duration: Pool.MaxIdleTime (default 30 min;
//     0, as in pgxpool, keeps no idle connection beyond MinIdle).
//   - pool_health_check_period: duration: Pool.HealthCheckPeriod (default
//     1 min; 0: none).
//   - pool_ping_timeout: duration: Config.PingTimeout (0: the default, 5 s:
//     a ping here always has a bound).
//
// Durations are time.ParseDuration's ("90s", "1h30m"); integers are
// decimal and fit in 32 bits. A 0 of pool_max_conn_lifetime,
// pool_max_conn_idle_time or pool_health_check_period is stored as 0, as
// pgxpool stores it, and keeps pgxpool's meaning (see PoolConfig).
//
// A connection string that does not parse is an error that matches
// ErrInvalidConfig and pool.ErrInvalidConfig and is a
// *pgconn.ParseConfigError, as pgxpool's; so is a pool_* value that does
// not parse or is out of range, whose error names the parameter.
func ParsePoolConfig(connString string) (*PoolConfig, error) {
	cc, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, configError{err}
	}
	cfg := &PoolConfig{Config: Config{ConnConfig: cc}}
	d := dsnParams{conn: connString, params: cc.RuntimeParams}

	maxConns, okMax, err := d.int("pool_max_conns", 1)
	if err != nil {
		return nil, err
	}
	minConns, _, err := d.int("pool_min_conns", 0)
	if err != nil {
		return nil, err
	}
	minIdle, _, err := d.int("pool_min_idle_conns", 0)
	if err != nil {
		return nil, err
	}
	lifetime, okLife, err := d.duration("pool_max_conn_lifetime")
	if err != nil {
		return nil, err
	}
	jitter, _, err := d.duration("pool_max_conn_lifetime_jitter")
	if err != nil {
		return nil, err
	}
	idle, okIdle, err := d.duration("pool_max_conn_idle_time")
	if err != nil {
		return nil, err
	}
	health, okHealth, err := d.duration("pool_health_check_period")
	if err != nil {
		return nil, err
	}
	pingTimeout, _, err := d.duration("pool_ping_timeout")
	if err != nil {
		return nil, err
	}

	p := &cfg.Pool
	p.MaxSize = defaultMaxSize()
	if okMax {
		p.MaxSize = maxConns
	}
	p.MinIdle = max(minConns, minIdle)
	p.MaxLifetime = defaultMaxLifetime
	if okLife {
		p.MaxLifetime = lifetime
	}
	if p.MaxLifetime == 0 {
		cfg.zeros |= zeroLifetime // none; the jitter means nothing then
	} else {
		p.MaxLifetime += jitter
		p.LifetimeJitter = jitter
	}
	p.MaxIdleTime = defaultMaxIdleTime
	if okIdle {
		p.MaxIdleTime = idle
		if idle == 0 {
			cfg.zeros |= zeroIdleTime
		}
	}
	p.HealthCheckPeriod = defaultHealthCheckPeriod
	if okHealth {
		p.HealthCheckPeriod = health
		if health == 0 {
			cfg.zeros |= zeroHealthCheck
		}
	}
	cfg.PingTimeout = pingTimeout
	return cfg, nil
}

// poolParams are pgxpool's connection-string parameters, which
// ParsePoolConfig reads.
var poolParams = [...]string{
	"pool_max_conns", "pool_min_conns", "pool_min_idle_conns", "pool_max_conn_lifetime",
	"pool_max_conn_lifetime_jitter", "pool_max_conn_idle_time", "pool_health_check_period", "pool_ping_timeout",
}

// dsnParams takes pgxpool's parameters out of a parsed connection string's
// run-time parameters.
type dsnParams struct {
	conn   string
	params map[string]string
}

// take removes and returns the parameter name.
func (d dsnParams) take(name string) (string, bool) {
	s, ok := d.params[name]
	if ok {
		delete(d.params, name)
	}
	return s, ok
}

func (d dsnParams) fail(name, what string, err error) error {
	return pgconn.NewParseConfigError(d.conn, what+" "+name, fmt.Errorf("%w: %s: %w", ErrInvalidConfig, name, err))
}

// int parses the integer parameter name, which must be at least least.
func (d dsnParams) int(name string, least int64) (int, bool, error) {
	s, ok := d.take(name)
	if !ok {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, false, d.fail(name, "cannot parse", err)
	}
	if n < least {
		return 0, false, d.fail(name, "out of range:", fmt.Errorf("must be >= %d, got %d", least, n))
	}
	return int(n), true, nil
}

// duration parses the duration parameter name, which must not be negative.
func (d dsnParams) duration(name string) (time.Duration, bool, error) {
	s, ok := d.take(name)
	if !ok {
		return 0, false, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, false, d.fail(name, "cannot parse", err)
	}
	if v < 0 {
		return 0, false, d.fail(name, "out of range:", fmt.Errorf("must be >= 0, got %v", v))
	}
	return v, true, nil
}

// opened returns c's Pool as OpenConfig opens it, in PoolConfig's terms:
// pgxpool's zeros (c.zeros) as the values that mean the same here (a
// negative lifetime and period for none, the smallest idle limit), then
// pgxpool's defaults in the other zero fields; and the zeros it used.
func (c *PoolConfig) opened() (pool.Config, pgxZeros) {
	pc, z := c.Pool, pgxZeros(0)
	zero := func(d *time.Duration, bit pgxZeros, v time.Duration) {
		if *d == 0 && c.zeros&bit != 0 {
			*d, z = v, z|bit
		}
	}
	zero(&pc.MaxLifetime, zeroLifetime, -1)
	zero(&pc.MaxIdleTime, zeroIdleTime, time.Nanosecond)
	zero(&pc.HealthCheckPeriod, zeroHealthCheck, -1)
	return withDefaults(pc), z
}

// reported returns pc, a pool's configuration as opened (with the zeros z
// it used), as Pool.Config reports it: with pgxpool's 0 where pgxpool has a
// value for the same setting (a lifetime or a period of none, the idle
// limit that pool_max_conn_idle_time=0 gave), and the set of those zeros.
func reported(pc pool.Config, z pgxZeros) (pool.Config, pgxZeros) {
	if pc.MaxLifetime < 0 {
		pc.MaxLifetime, z = 0, z|zeroLifetime
	}
	if z&zeroIdleTime != 0 {
		pc.MaxIdleTime = 0
	}
	if pc.HealthCheckPeriod < 0 {
		pc.HealthCheckPeriod, z = 0, z|zeroHealthCheck
	}
	return pc, z
}

// withDefaults returns pc with pgxpool's defaults in its zero fields.
func withDefaults(pc pool.Config) pool.Config {
	if pc.MaxSize == 0 {
		pc.MaxSize = defaultMaxSize()
	}
	fillDefaults(&pc.MaxLifetime, &pc.MaxIdleTime, &pc.HealthCheckPeriod)
	return pc
}

// keyedDefaults is withDefaults for a KeyedPool's configuration, whose
// MaxSize, the budget of every key together, has no default (see
// KeyedPoolConfig).
func keyedDefaults(kc pool.KeyedConfig) pool.KeyedConfig {
	fillDefaults(&kc.PerKey.MaxLifetime, &kc.PerKey.MaxIdleTime, &kc.PerKey.HealthCheckPeriod)
	return kc
}

// fillDefaults sets the zero ones of a pool's MaxLifetime, MaxIdleTime and
// HealthCheckPeriod to pgxpool's defaults.
func fillDefaults(lifetime, idleTime, healthCheck *time.Duration) {
	if *lifetime == 0 {
		*lifetime = defaultMaxLifetime
	}
	if *idleTime == 0 {
		*idleTime = defaultMaxIdleTime
	}
	if *healthCheck == 0 {
		*healthCheck = defaultHealthCheckPeriod
	}
}

// forPool returns pc as pool.New takes it: a negative (none) MaxLifetime,
// MaxIdleTime or HealthCheckPeriod becomes pool.Config's zero, which means
// none there.
func forPool(pc pool.Config) pool.Config {
	noneToZero(&pc.MaxLifetime, &pc.MaxIdleTime, &pc.HealthCheckPeriod)
	return pc
}

// forKeyed is forPool for pool.NewKeyed's configuration.
func forKeyed(kc pool.KeyedConfig) pool.KeyedConfig {
	kc.PerKey = forPool(kc.PerKey)
	return kc
}

// noneToZero sets each negative duration (none, in PoolConfig's and
// KeyedPoolConfig's terms) to 0 (none, in the pool's).
func noneToZero(ds ...*time.Duration) {
	for _, d := range ds {
		if *d < 0 {
			*d = 0
		}
	}
}

// override sets each field of *dst to the same field of src where src's is
// not zero.
func override(dst *pool.Config, src pool.Config) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src)
	for i := range s.NumField() {
		if f := s.Field(i); s.Type().Field(i).IsExported() && !f.IsZero() {
			d.Field(i).Set(f)
		}
	}
}
