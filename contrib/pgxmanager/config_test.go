package pgxmanager_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// pgxpool's pool parameters, as they appear in its documentation.
var poolParams = []string{
	"pool_max_conns", "pool_min_conns", "pool_min_idle_conns", "pool_max_conn_lifetime",
	"pool_max_conn_lifetime_jitter", "pool_max_conn_idle_time", "pool_health_check_period", "pool_ping_timeout",
}

// Both forms of connection string carry pgxpool's parameters; they are read
// into the pool's configuration and never sent to the server.
func TestParsePoolConfigReadsPgxpoolParameters(t *testing.T) {
	for form, conn := range map[string]string{
		"URL": "postgres://u@127.0.0.1:5432/db?sslmode=disable&application_name=app&pool_max_conns=42&pool_min_conns=3" +
			"&pool_min_idle_conns=2&pool_max_conn_lifetime=1h30m&pool_max_conn_lifetime_jitter=10m&pool_max_conn_idle_time=5m" +
			"&pool_health_check_period=15s&pool_ping_timeout=250ms",
		"keyword/value": "host=127.0.0.1 port=5432 user=u dbname=db sslmode=disable application_name=app pool_max_conns=42 pool_min_conns=3 " +
			"pool_min_idle_conns=2 pool_max_conn_lifetime=1h30m pool_max_conn_lifetime_jitter=10m pool_max_conn_idle_time=5m " +
			"pool_health_check_period=15s pool_ping_timeout=250ms",
	} {
		t.Run(form, func(t *testing.T) {
			cfg, err := pgxmanager.ParsePoolConfig(conn)
			require.NoError(t, err)
			p := cfg.Pool
			assert.Equal(t, 42, p.MaxSize)
			assert.Equal(t, 3, p.MinIdle, "the greater of pool_min_conns and pool_min_idle_conns")
			assert.Equal(t, 100*time.Minute, p.MaxLifetime, "lifetime + jitter: pgxpool closes in [1h30m, 1h40m)")
			assert.Equal(t, 10*time.Minute, p.LifetimeJitter, "pool takes the jitter off MaxLifetime: (1h30m, 1h40m]")
			assert.Equal(t, 5*time.Minute, p.MaxIdleTime)
			assert.Equal(t, 15*time.Second, p.HealthCheckPeriod)
			assert.Equal(t, 250*time.Millisecond, cfg.PingTimeout)
			for _, name := range poolParams {
				assert.NotContains(t, cfg.ConnConfig.RuntimeParams, name, "sent to the server")
			}
			assert.Equal(t, "app", cfg.ConnConfig.RuntimeParams["application_name"], "other parameters stay")
			assert.Equal(t, conn, cfg.ConnString())
		})
	}
}

// Without pool parameters, ParsePoolConfig has pgxpool's defaults; zero
// values in the connection string are stored as pgxpool stores them and
// mean what they mean to pgxpool, as long as they are left zero.
func TestParsePoolConfigDefaultsAndZeroes(t *testing.T) {
	cfg, err := pgxmanager.ParsePoolConfig("postgres://u@h/db")
	require.NoError(t, err)
	assert.Equal(t, pool.Config{
		MaxSize:           pgxmanager.DefaultMaxSize(),
		MaxLifetime:       time.Hour,
		MaxIdleTime:       30 * time.Minute,
		HealthCheckPeriod: time.Minute,
	}, cfg.Pool)
	assert.Zero(t, cfg.PingTimeout, "the Manager's default")
	assert.GreaterOrEqual(t, pgxmanager.DefaultMaxSize(), 4)
	cfg.Pool = pool.Config{MaxSize: 3}
	assert.Equal(t, pool.Config{MaxSize: 3, MaxLifetime: time.Hour, MaxIdleTime: 30 * time.Minute, HealthCheckPeriod: time.Minute},
		pgxmanager.PoolFor(cfg), "zeros a program set are defaults")

	cfg, err = pgxmanager.ParsePoolConfig("postgres://u@h/db?pool_max_conn_lifetime_jitter=5m")
	require.NoError(t, err)
	assert.Equal(t, time.Hour+5*time.Minute, cfg.Pool.MaxLifetime, "the default lifetime, then the jitter")
	assert.Equal(t, 5*time.Minute, cfg.Pool.LifetimeJitter)

	cfg, err = pgxmanager.ParsePoolConfig("postgres://u@h/db?pool_max_conn_lifetime=0&pool_max_conn_lifetime_jitter=5m" +
		"&pool_max_conn_idle_time=0&pool_health_check_period=0s&pool_ping_timeout=0")
	require.NoError(t, err)
	assert.Zero(t, cfg.Pool.MaxLifetime, "lifetime 0, as pgxpool stores it")
	assert.Zero(t, cfg.Pool.LifetimeJitter, "no jitter without a lifetime")
	assert.Zero(t, cfg.Pool.MaxIdleTime)
	assert.Zero(t, cfg.Pool.HealthCheckPeriod)
	want := pool.Config{MaxSize: pgxmanager.DefaultMaxSize(), MaxIdleTime: time.Nanosecond}
	assert.Equal(t, want, pgxmanager.PoolFor(cfg),
		"pgxpool's meanings, in pool.Config's terms: no lifetime, no idle connection kept beyond MinIdle, no health checks")
	cfg.Pool = pool.Config{MaxSize: cfg.Pool.MaxSize}
	assert.Equal(t, want, pgxmanager.PoolFor(cfg), "the string's zeros hold while they are zero")
	cfg.Pool.MaxIdleTime = time.Minute
	assert.Equal(t, time.Minute, pgxmanager.PoolFor(cfg).MaxIdleTime, "a value set replaces a zero")
	pc := pgxmanager.ForPool(pgxmanager.WithDefaults(pool.Config{MaxLifetime: -1, MaxIdleTime: -1, HealthCheckPeriod: -1}))
	assert.Zero(t, pc.MaxLifetime, "negative: none, as pool.Config says it")
	assert.Zero(t, pc.MaxIdleTime)
	assert.Zero(t, pc.HealthCheckPeriod)
}

// A bad pool parameter is an error that names it, matches ErrInvalidConfig
// and pool.ErrInvalidConfig and is a *pgconn.ParseConfigError (as
// pgxpool's), from ParsePoolConfig and Open alike.
func TestBadPoolParameterIsAConfigErrorNamingIt(t *testing.T) {
	bad := map[string][]string{
		"pool_max_conns":                {"abc", "0", "-1", "1.5", "4294967296"},
		"pool_min_conns":                {"abc", "-1"},
		"pool_min_idle_conns":           {"x", "-2"},
		"pool_max_conn_lifetime":        {"abc", "250", "-1s"},
		"pool_max_conn_lifetime_jitter": {"1 hour", "-1m"},
		"pool_max_conn_idle_time":       {"abc", "-5m"},
		"pool_health_check_period":      {"abc", "-1s"},
		"pool_ping_timeout":             {"abc", "250"},
	}
	for name, values := range bad {
		for _, v := range values {
			conn := "postgres://u@h/db?" + name + "=" + strings.ReplaceAll(v, " ", "%20")
			for fn, parse := range map[string]func(string) error{
				"ParsePoolConfig": func(s string) error { _, err := pgxmanager.ParsePoolConfig(s); return err },
				"Open":            func(s string) error { _, err := pgxmanager.Open(s, pool.Config{}); return err },
			} {
				err := parse(conn)
				require.Error(t, err, "%s(%s=%s)", fn, name, v)
				assert.ErrorIs(t, err, pool.ErrInvalidConfig, "%s(%s=%s)", fn, name, v)
				assert.ErrorIs(t, err, pgxmanager.ErrInvalidConfig, "%s(%s=%s)", fn, name, v)
				assert.Contains(t, err.Error(), name, "%s(%s=%s)", fn, name, v)
				var pce *pgconn.ParseConfigError
				assert.True(t, errors.As(err, &pce), "%s(%s=%s): %T", fn, name, v, err)
			}
		}
	}
}

// Open(dsn, pool.Config{}) opens a pool with pgxpool's defaults; a value in
// the connection string wins over a default, and an explicit pool.Config
// field wins over both.
func TestOpenPrecedence(t *testing.T) {
	base := dsn(t)
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	open := func(conn string, pc pool.Config) *pgxmanager.Pool {
		t.Helper()
		p, err := pgxmanager.Open(conn, pc)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close(context.Background()) })
		return p
	}

	p := open(base, pool.Config{})
	assert.Equal(t, pgxmanager.DefaultMaxSize(), p.Stats().MaxSize)
	c := p.Config().Pool
	assert.Equal(t, time.Hour, c.MaxLifetime)
	assert.Equal(t, 30*time.Minute, c.MaxIdleTime)
	assert.Equal(t, time.Minute, c.HealthCheckPeriod)
	assert.Equal(t, pgxmanager.DefaultPingAfter, p.Config().PingAfter, "the Manager's defaults too")
	var n int
	require.NoError(t, p.QueryRow(ctxFor(t, 10*time.Second), "SELECT 1").Scan(&n))

	p = open(base+sep+"pool_max_conns=3&pool_max_conn_idle_time=2m", pool.Config{})
	assert.Equal(t, 3, p.Stats().MaxSize, "the connection string over the default")
	assert.Equal(t, 2*time.Minute, p.Config().Pool.MaxIdleTime)
	require.NoError(t, p.QueryRow(ctxFor(t, 10*time.Second), "SELECT 1").Scan(&n), "pool parameters reached the server")

	p = open(base+sep+"pool_max_conns=3&pool_max_conn_idle_time=2m", pool.Config{MaxSize: 2, MinIdle: 1})
	assert.Equal(t, 2, p.Stats().MaxSize, "pool.Config over the connection string")
	assert.Equal(t, 1, p.Config().Pool.MinIdle)
	assert.Equal(t, 2*time.Minute, p.Config().Pool.MaxIdleTime, "fields pool.Config leaves zero keep the string's value")

	_, err := pgxmanager.Open(base, pool.Config{MaxSize: 2, MinIdle: 3})
	require.ErrorIs(t, err, pool.ErrInvalidConfig, "pool.New still validates")
}

// Open's explicit lifetime wins over the connection string's lifetime and
// jitter together: pool_max_conn_lifetime_jitter is a spread after
// pool_max_conn_lifetime, so it goes with the lifetime it spreads, and a
// pool.Config that sets MaxLifetime or LifetimeJitter gives the pool's
// lifetimes in pool.Config's own terms. Without either, the string's pair
// holds.
func TestOpenExplicitLifetimeReplacesTheStringsLifetimeAndJitter(t *testing.T) {
	const dsn = "postgres://u@127.0.0.1:1/db?pool_max_conn_lifetime=1h30m&pool_max_conn_lifetime_jitter=10m"
	lifetime := func(t *testing.T, conn string, pc pool.Config) (maxLifetime, jitter time.Duration) {
		t.Helper()
		p, err := pgxmanager.Open(conn, pc)
		require.NoError(t, err)
		defer func() { require.NoError(t, p.Close(context.Background())) }()
		c := p.Config().Pool
		return c.MaxLifetime, c.LifetimeJitter
	}
	for _, tc := range []struct {
		name         string
		conn         string
		pc           pool.Config
		life, jitter time.Duration
	}{
		{"the string's pair", dsn, pool.Config{}, 100 * time.Minute, 10 * time.Minute},
		{"MaxLifetime", dsn, pool.Config{MaxLifetime: 20 * time.Minute}, 20 * time.Minute, 0},
		{"LifetimeJitter", dsn, pool.Config{LifetimeJitter: 2 * time.Minute}, 90 * time.Minute, 2 * time.Minute},
		{"both", dsn, pool.Config{MaxLifetime: 20 * time.Minute, LifetimeJitter: time.Minute}, 20 * time.Minute, time.Minute},
		{"no lifetime", dsn, pool.Config{MaxLifetime: -1}, 0, 0}, // reported as pgxpool's 0
		{"no lifetime over the string's jitter alone", "postgres://u@127.0.0.1:1/db?pool_max_conn_lifetime_jitter=5m",
			pool.Config{MaxLifetime: -1}, 0, 0},
		{"LifetimeJitter over the default lifetime", "postgres://u@127.0.0.1:1/db?pool_max_conn_lifetime_jitter=5m",
			pool.Config{LifetimeJitter: time.Minute}, time.Hour, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			life, jitter := lifetime(t, tc.conn, tc.pc)
			assert.Equal(t, tc.life, life, "MaxLifetime")
			assert.Equal(t, tc.jitter, jitter, "LifetimeJitter")
		})
	}
}

// Config returns what OpenConfig opens the same pool with: defaults filled
// in, "none" reported as pgxpool's 0, a copy the caller may change.
func TestConfigRoundTrips(t *testing.T) {
	cfg, err := pgxmanager.ParsePoolConfig(dsn(t))
	require.NoError(t, err)
	cfg.Pool.MaxLifetime = -1
	cfg.Pool.MaxSize = 2
	p, err := pgxmanager.OpenConfig(cfg)
	require.NoError(t, err)
	defer p.Close(context.Background())
	got := p.Config()
	assert.Zero(t, got.Pool.MaxLifetime, "none, as pgxpool reports it")
	assert.Equal(t, 2, got.Pool.MaxSize)
	assert.Equal(t, cfg.ConnString(), got.ConnString())
	got.ConnConfig.RuntimeParams["application_name"] = "changed"
	assert.NotEqual(t, "changed", p.Config().ConnConfig.RuntimeParams["application_name"], "Config returns a copy")
	assert.Equal(t, pgxmanager.PoolFor(cfg), pgxmanager.PoolFor(got), "the same pool")
	p2, err := pgxmanager.OpenConfig(got)
	require.NoError(t, err)
	defer p2.Close(context.Background())
	assert.Equal(t, p.Config().Pool, p2.Config().Pool)
	var n int
	require.NoError(t, p2.QueryRow(ctxFor(t, 10*time.Second), "SELECT 1").Scan(&n))
}

// Config reports MaxSize, MinIdle, the lifetime, the idle time and the
// health check period as pgxpool's Config reports MaxConns, MinConns,
// MaxConnLifetime, MaxConnIdleTime and HealthCheckPeriod for the same
// connection string: its defaults, the values given, and its 0 for no
// lifetime, no health checks and no idle connection kept beyond the
// minimum, where the pool's own terms are a negative value or a
// nanosecond. A "none" set in PoolConfig is reported the same way, and the
// report opens the same pool again. No server is needed: nothing is
// dialled.
func TestConfigReportsWhatPgxpoolReports(t *testing.T) {
	const base = "postgres://u@127.0.0.1:1/db?sslmode=disable"
	for name, params := range map[string]string{
		"defaults": "",
		"zeros":    "&pool_max_conn_lifetime=0&pool_max_conn_idle_time=0&pool_health_check_period=0",
		"values":   "&pool_max_conns=7&pool_min_conns=2&pool_max_conn_lifetime=2h&pool_max_conn_idle_time=3m&pool_health_check_period=20s",
	} {
		t.Run(name, func(t *testing.T) {
			want, err := pgxpool.ParseConfig(base + params)
			require.NoError(t, err)
			if want.HealthCheckPeriod > 0 { // pgxpool's ticker panics on a 0: it opens no such pool
				pp, err := pgxpool.NewWithConfig(context.Background(), want)
				require.NoError(t, err)
				want = pp.Config()
				pp.Close()
			}
			p, err := pgxmanager.Open(base+params, pool.Config{})
			require.NoError(t, err)
			defer func() { require.NoError(t, p.Close(context.Background())) }()
			got := p.Config()
			assert.EqualValues(t, want.MaxConns, got.Pool.MaxSize)
			assert.EqualValues(t, max(want.MinConns, want.MinIdleConns), got.Pool.MinIdle)
			assert.Equal(t, want.MaxConnLifetime, got.Pool.MaxLifetime)
			assert.Equal(t, want.MaxConnIdleTime, got.Pool.MaxIdleTime)
			assert.Equal(t, want.HealthCheckPeriod, got.Pool.HealthCheckPeriod)

			again, err := pgxmanager.OpenConfig(got)
			require.NoError(t, err)
			defer func() { require.NoError(t, again.Close(context.Background())) }()
			assert.Equal(t, got.Pool, again.Config().Pool)
			assert.Equal(t, pgxmanager.PoolFor(got), pgxmanager.PoolFor(again.Config()))
		})
	}

	cfg, err := pgxmanager.ParsePoolConfig(base)
	require.NoError(t, err)
	cfg.Pool.MaxLifetime, cfg.Pool.HealthCheckPeriod = -1, -time.Second
	p, err := pgxmanager.OpenConfig(cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close(context.Background())) }()
	got := p.Config()
	assert.Zero(t, got.Pool.MaxLifetime, "no lifetime: pgxpool's 0")
	assert.Zero(t, got.Pool.HealthCheckPeriod, "no health checks: pgxpool's 0")
	pc := pgxmanager.PoolFor(got)
	assert.Zero(t, pc.MaxLifetime, "the report opens a pool without a lifetime")
	assert.Zero(t, pc.HealthCheckPeriod)
	assert.Equal(t, 30*time.Minute, pc.MaxIdleTime)
}

// OpenConfig(nil) says what is wrong, with the package's name.
func TestOpenConfigOfNilSaysSo(t *testing.T) {
	_, err := pgxmanager.OpenConfig(nil)
	require.EqualError(t, err, "pgxmanager: invalid config: nil *PoolConfig")
}

// Every configuration error of the package matches ErrInvalidConfig and
// pool.ErrInvalidConfig both, whichever checked it (pgx's parser, the pool_*
// parameters, New, pool.New, pool.NewKeyed or the facade), and keeps its
// own message. No server is needed: nothing is dialled.
func TestEveryConfigErrorMatchesBothSentinels(t *testing.T) {
	cc, err := pgx.ParseConfig("postgres://u@127.0.0.1:1/db")
	require.NoError(t, err)
	configFor := func(context.Context, string) (*pgx.ConnConfig, error) { return cc, nil }
	open := func(p *pgxmanager.Pool, err error) error {
		if p != nil {
			_ = p.Close(context.Background())
		}
		return err
	}
	openKeyed := func(kp *pgxmanager.KeyedPool[string], err error) error {
		if kp != nil {
			_ = kp.Close(context.Background())
		}
		return err
	}
	for _, c := range []struct {
		name, says string
		err        error
	}{
		{"ParsePoolConfig: a string that does not parse", "cannot parse",
			func() error { _, err := pgxmanager.ParsePoolConfig("postgres://u@h:notaport/db"); return err }()},
		{"ParsePoolConfig: a bad pool parameter", "pool_max_conns",
			func() error { _, err := pgxmanager.ParsePoolConfig("postgres://u@h/db?pool_max_conns=0"); return err }()},
		{"Open: a bad pool parameter", "pool_health_check_period",
			open(pgxmanager.Open("postgres://u@h/db?pool_health_check_period=x", pool.Config{}))},
		{"Open: a bad pool.Config field", "MinIdle",
			open(pgxmanager.Open("postgres://u@h/db", pool.Config{MaxSize: 2, MinIdle: 3}))},
		{"OpenConfig: nil", "nil *PoolConfig", open(pgxmanager.OpenConfig(nil))},
		{"OpenConfig: no ConnConfig", "Config.ConnConfig is nil", open(pgxmanager.OpenConfig(&pgxmanager.PoolConfig{}))},
		{"OpenConfig: a bad pool field", "MaxConnecting",
			open(pgxmanager.OpenConfig(&pgxmanager.PoolConfig{Config: pgxmanager.Config{ConnConfig: cc}, Pool: pool.Config{MaxConnecting: -1}}))},
		{"New: a bad field", "Config.CloseTimeout",
			func() error {
				_, err := pgxmanager.New(pgxmanager.Config{ConnConfig: cc, CloseTimeout: -1})
				return err
			}()},
		{"OpenKeyed: no ConfigFor", "ConfigFor", openKeyed(pgxmanager.OpenKeyed[string](nil, pool.KeyedConfig{MaxSize: 2}))},
		{"OpenKeyed: a bad pool field", "KeyedConfig.MaxSize", openKeyed(pgxmanager.OpenKeyed(configFor, pool.KeyedConfig{}))},
		{"OpenKeyedConfig: a bad Manager field", "Config.PingTimeout",
			openKeyed(pgxmanager.OpenKeyedConfig(&pgxmanager.KeyedPoolConfig[string]{
				ConfigFor: configFor, Config: pgxmanager.Config{PingTimeout: -1}, Pool: pool.KeyedConfig{MaxSize: 2}}))},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorIs(t, c.err, pgxmanager.ErrInvalidConfig)
			require.ErrorIs(t, c.err, pool.ErrInvalidConfig)
			assert.Contains(t, c.err.Error(), c.says)
		})
	}
	assert.NotErrorIs(t, pool.ErrInvalidConfig, pgxmanager.ErrInvalidConfig, "pool's own sentinel is only pool's")
}
