package pgxmanager_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// tenants are the keys of a keyed pool under test: databases of the test
// server, made for the test and dropped at its end, each its own key.
type tenants struct {
	name    string   // the application_name of every connection of the pool
	keys    []string // the databases' names
	configs map[string]*pgx.ConnConfig
	admin   *admin
}

// newTenants makes n databases for the test, dropped when it ends.
func newTenants(t *testing.T, n int) *tenants {
	t.Helper()
	ts := &tenants{name: uniqueName(t), configs: map[string]*pgx.ConnConfig{}, admin: dialAdmin(t)}
	base, err := pgx.ParseConfig(dsn(t))
	require.NoError(t, err)
	ctx := ctxFor(t, 30*time.Second)
	for i := range n {
		db := fmt.Sprintf("%s_%d", strings.NewReplacer("-", "_", ".", "_").Replace(ts.name), i)
		_, err := ts.admin.c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize())
		require.NoError(t, err, "the role of %s must be allowed to create databases", envDSN)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := ts.admin.c.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)")
			assert.NoError(t, err)
		})
		cc := base.Copy()
		cc.Database = db
		cc.RuntimeParams["application_name"] = ts.name
		ts.keys = append(ts.keys, db)
		ts.configs[db] = cc
	}
	return ts
}

// configFor is the pool's ConfigFor: each key's database.
func (ts *tenants) configFor(_ context.Context, key string) (*pgx.ConnConfig, error) {
	cc, ok := ts.configs[key]
	if !ok {
		return nil, fmt.Errorf("no tenant %q", key)
	}
	return cc, nil
}

// open opens a KeyedPool of cfg over the tenants, closed at the end of the
// test (before the databases are dropped).
func (ts *tenants) open(t *testing.T, cfg pgxmanager.KeyedPoolConfig[string]) *pgxmanager.KeyedPool[string] {
	t.Helper()
	cfg.ConfigFor = ts.configFor
	kp, err := pgxmanager.OpenKeyedConfig(&cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, kp.Close(ctx))
	})
	return kp
}

// requireRightDatabase fails the test unless db's connections are to the
// database key.
func requireRightDatabase(t *testing.T, ctx context.Context, db *pgxmanager.Pool, key string) {
	t.Helper()
	var got string
	require.NoError(t, db.QueryRow(ctx, "SELECT current_database()").Scan(&got))
	require.Equal(t, key, got, "a query of key %s ran on another database", key)
}

// sampleBackends counts the backends named name in pg_stat_activity, over
// a connection of its own (see sampleCount).
func sampleBackends(t *testing.T, name string) (stop func() (most, samples int)) {
	t.Helper()
	return sampleCount(t, dialAdmin(t), "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name)
}

// sampleCount runs query, a count, on a again and again until the function
// it returns is called; that function returns the most it saw at once and
// the number of samples.
func sampleCount(t *testing.T, a *admin, query string, args ...any) (stop func() (most, samples int)) {
	t.Helper()
	done, res := make(chan struct{}), make(chan [2]int, 1)
	go func() {
		most, samples := 0, 0
		defer func() { res <- [2]int{most, samples} }()
		for {
			select {
			case <-done:
				return
			default:
			}
			var n int
			if err := a.c.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
				t.Errorf("sampling: %v", err)
				return
			}
			most, samples = max(most, n), samples+1
		}
	}()
	return func() (int, int) {
		close(done)
		r := <-res
		return r[0], r[1]
	}
}

// A load over five databases, asked for by eight goroutines at once,
// on a pool whose MaxSize (4) is below both the number of keys and their
// sum of MaxSizePerKey (15): the server never has more than MaxSize backends
// of the pool, every query runs on its key's database (each row inserted
// through a key is in its database), the keys take the budget from each
// other (evictions), and once the load is over the whole budget can be
// leased, a key that finds it spent waits until one is released, and Close
// returns with every connection closed.
func TestKeyedPoolHoldsOneBudgetAcrossDatabases(t *testing.T) {
	const keys, maxSize, perKey, workers, rounds = 5, 4, 3, 8, 9
	ts := newTenants(t, keys)
	kp := ts.open(t, pgxmanager.KeyedPoolConfig[string]{Pool: pool.KeyedConfig{
		MaxSize:       maxSize,
		MaxSizePerKey: perKey,
		PerKey:        pool.Config{AcquireTimeout: 20 * time.Second},
	}})
	ctx := ctxFor(t, 60*time.Second)
	inserted := map[string]*atomic.Int64{}
	for _, key := range ts.keys {
		_, err := kp.For(key).Exec(ctx, "CREATE TABLE items (n int4)")
		require.NoError(t, err)
		inserted[key] = new(atomic.Int64)
	}

	stopSampling := sampleBackends(t, ts.name)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				key := ts.keys[(w+i/3)%keys] // three calls in a row for a key
				if err := keyedRound(ctx, kp.For(key), key, (w+i)%6, inserted[key]); err != nil {
					t.Errorf("worker %d, round %d, key %s: %v", w, i, key, err)
					return
				}
			}
		})
	}
	wg.Wait()
	most, samples := stopSampling()
	require.False(t, t.Failed())

	assert.Positive(t, samples)
	assert.LessOrEqual(t, most, maxSize, "backends of the pool at once, in pg_stat_activity")
	assert.Positive(t, most, "the sampler saw the pool's backends")
	s := kp.Pool().Stats()
	t.Logf("%d calls: %d connects, %d evictions, %d waits; at most %d backends in %d samples of pg_stat_activity",
		workers*rounds, s.Connects, s.ClosedBy[pool.CloseEvict], s.Blocked, most, samples)
	assert.Equal(t, maxSize, s.MaxSize)
	assert.Zero(t, s.Leased)
	assert.LessOrEqual(t, s.Live, maxSize)
	assert.Positive(t, s.ClosedBy[pool.CloseEvict], "five keys shared four connections")
	for _, key := range ts.keys {
		var n int64
		require.NoError(t, kp.For(key).QueryRow(ctx, "SELECT count(*) FROM items").Scan(&n))
		assert.Equal(t, inserted[key].Load(), n, "rows inserted through key %s, in its database", key)
	}

	// The whole budget, leased by four keys: the fifth waits for it.
	var held []pool.Lease[*pgx.Conn]
	for _, key := range ts.keys[:maxSize] {
		l, err := kp.For(key).Acquire(ctx)
		require.NoError(t, err)
		held = append(held, l)
	}
	_, err := kp.Pool().TryAcquire(ctx, ts.keys[maxSize])
	require.ErrorIs(t, err, pool.ErrExhausted, "a fifth connection")
	got := make(chan string, 1)
	go func() {
		var db string
		assert.NoError(t, kp.For(ts.keys[maxSize]).QueryRow(ctx, "SELECT current_database()").Scan(&db))
		got <- db
	}()
	eventually(t, 10*time.Second, func() (bool, string) {
		return kp.Pool().Stats().Waiting == 1, fmt.Sprintf("%d waiting", kp.Pool().Stats().Waiting)
	})
	held[0].Release()
	assert.Equal(t, ts.keys[maxSize], <-got)
	n, _ := ts.admin.backends(ts.name)
	assert.LessOrEqual(t, n, maxSize)
	for _, l := range held[1:] {
		l.Release()
	}
	for _, key := range ts.keys {
		requireRightDatabase(t, ctx, kp.For(key), key)
	}
	require.Zero(t, kp.Pool().Stats().Leased)

	require.NoError(t, kp.Close(ctx))
	eventually(t, 10*time.Second, func() (bool, string) {
		n, _ := ts.admin.backends(ts.name)
		return n == 0, fmt.Sprintf("%d backends after Close", n)
	})
}

// keyedRound is one call of the load of
// TestKeyedPoolHoldsOneBudgetAcrossDatabases on db, key's: each op checks
// that it ran on key's database; those that insert count their rows in
// inserted.
func keyedRound(ctx context.Context, db *pgxmanager.Pool, key string, op int, inserted *atomic.Int64) error {
	check := func(got string) error {
		if got != key {
			return fmt.Errorf("ran on database %s", got)
		}
		return nil
	}
	var got string
	switch op {
	case 0:
		if err := db.QueryRow(ctx, "SELECT current_database()").Scan(&got); err != nil {
			return err
		}
	case 1:
		rows, err := db.Query(ctx, "SELECT current_database() FROM generate_series(1, 3)")
		if err != nil {
			return err
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		got = strings.Join(names[:1], "")
	case 2:
		tag, err := db.Exec(ctx, "INSERT INTO items SELECT 1 WHERE current_database() = $1", key)
		if err != nil {
			return err
		}
		inserted.Add(tag.RowsAffected())
		got = key // a row on another database would be missing from key's count
	case 3:
		b := &pgx.Batch{}
		b.Queue("SELECT current_database()").QueryRow(func(r pgx.Row) error { return r.Scan(&got) })
		b.Queue("INSERT INTO items VALUES (3)")
		if err := db.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		inserted.Add(1)
	case 4:
		err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, "SELECT current_database()").Scan(&got); err != nil {
				return err
			}
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"items"}, []string{"n"}, pgx.CopyFromRows([][]any{{4}, {4}}))
			return err
		})
		if err != nil {
			return err
		}
		inserted.Add(2)
	case 5:
		n, err := db.CopyFrom(ctx, pgx.Identifier{"items"}, []string{"n"}, pgx.CopyFromRows([][]any{{5}}))
		if err != nil {
			return err
		}
		inserted.Add(n)
		err = db.AcquireFunc(ctx, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, "SELECT current_database()").Scan(&got)
		})
		if err != nil {
			return err
		}
	}
	return check(got)
}

// A pool of one connection serves three keys in turn: each query of a key
// other than the last one's closes the idle connection of that key
// (CloseEvict) to open its own, so that the server never sees two.
func TestKeyedPoolOfOneServesEveryKeyInTurn(t *testing.T) {
	ts := newTenants(t, 3)
	kp := ts.open(t, pgxmanager.KeyedPoolConfig[string]{Pool: pool.KeyedConfig{MaxSize: 1}})
	ctx := ctxFor(t, 30*time.Second)
	const queries = 12
	for i := range queries {
		key := ts.keys[i%len(ts.keys)]
		requireRightDatabase(t, ctx, kp.For(key), key)
		n, _ := ts.admin.backends(ts.name)
		require.LessOrEqual(t, n, 1, "backends of the pool after query %d", i)
	}
	eventually(t, 10*time.Second, func() (bool, string) {
		s := kp.Pool().Stats()
		return s.ClosedBy[pool.CloseEvict] == queries-1, fmt.Sprintf("%d evictions, want %d", s.ClosedBy[pool.CloseEvict], queries-1)
	})
	s := kp.Pool().Stats()
	assert.EqualValues(t, queries, s.Connects)
	assert.EqualValues(t, queries-1, s.Closed, "every close an eviction")
	assert.Equal(t, 1, kp.Pool().Len(), "the evicted keys' state is dropped")
	ks, ok := kp.Pool().KeyStats(ts.keys[(queries-1)%len(ts.keys)])
	require.True(t, ok, "the last key keeps its connection")
	assert.Equal(t, 1, ks.Idle)
	_, ok = kp.Pool().KeyStats(ts.keys[0])
	assert.False(t, ok)
}

// Each query method of a key's Pool runs on that key's connections and
// gives them back; the key's Pool's Stats and Stat are the key's, the
// KeyedPool's Stat adds up every key's, and the key's Reset closes the
// key's connections only.
func TestKeyedPoolForQueryMethodsRunOnTheirKey(t *testing.T) {
	ts := newTenants(t, 2)
	kp := ts.open(t, pgxmanager.KeyedPoolConfig[string]{Pool: pool.KeyedConfig{MaxSize: 2, MaxSizePerKey: 1}})
	ctx := ctxFor(t, 30*time.Second)
	for _, key := range ts.keys {
		db := kp.For(key)
		exerciseQueries(t, ctx, db) // one connection per key: its temporary table stays visible
		require.NoError(t, db.Ping(ctx))
		var inTx string
		require.NoError(t, pgx.BeginTxFunc(ctx, db, pgx.TxOptions{IsoLevel: pgx.Serializable}, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, "SELECT current_database()").Scan(&inTx)
		}))
		assert.Equal(t, key, inTx)
		l, err := db.Acquire(ctx)
		require.NoError(t, err)
		assert.Equal(t, key, l.Value().Config().Database)
		l.Release()
		requireRightDatabase(t, ctx, db, key)
		ks, ok := kp.Pool().KeyStats(key)
		require.True(t, ok)
		assert.Zero(t, ks.Leased, "a connection of %s still leased", key)
		assert.Equal(t, 1, ks.Live)
		assert.Equal(t, ks, db.Stats(), "a key's Pool's Stats are the key's")
		assert.EqualValues(t, 1, db.Stat().TotalConns())
		assert.EqualValues(t, 1, db.Stat().MaxConns(), "the key's MaxSizePerKey")
		assert.Equal(t, ks.Acquires, uint64(db.Stat().AcquireCount()))
	}
	s := kp.Pool().Stats()
	assert.Equal(t, 2, s.Live)
	assert.Zero(t, s.ClosedBy[pool.CloseEvict], "the budget has room for both keys")
	st := kp.Stat()
	assert.EqualValues(t, 2, st.TotalConns())
	assert.EqualValues(t, 2, st.MaxConns())
	assert.Equal(t, s.Acquires, uint64(st.AcquireCount()))
	assert.Zero(t, st.RetryCount())

	kp.For(ts.keys[0]).Reset()
	eventually(t, 10*time.Second, func() (bool, string) {
		_, ok := kp.Pool().KeyStats(ts.keys[0])
		return !ok, "the reset key still has state"
	})
	assert.Equal(t, pool.Stats{MaxSize: 1}, kp.For(ts.keys[0]).Stats(), "a key without state: zero figures and its MaxSizePerKey")
	_, ok := kp.Pool().KeyStats(ts.keys[1])
	assert.True(t, ok, "a key's Reset leaves the other keys")
	kp.Pool().Reset()
	eventually(t, 10*time.Second, func() (bool, string) { return kp.Pool().Len() == 0, fmt.Sprintf("%d keys", kp.Pool().Len()) })
	require.NoError(t, kp.Pool().Warm(ctx, ts.keys...))
	assert.Equal(t, 2, kp.Pool().Stats().Idle, "Warm connects each key")
}

// Every failure of a call on a key's connection leaves a keyed pool of one
// connection usable for every key: the connection comes back (released, or
// destroyed and replaced when its state is unknown), a query of another
// key gets the budget, and Close returns. A lost connection would make the
// next query, of any key, wait for ever. The failures are
// TestNoFailureLosesOrPoisonsTheConnection's, run on a key's Pool.
func TestKeyedNoFailureLosesOrPoisonsTheConnection(t *testing.T) {
	for _, f := range failures() {
		t.Run(f.name, func(t *testing.T) {
			cfg := failureConfig(t)
			cc := cfg.ConnConfig
			cfg.ConnConfig = nil
			kp, err := pgxmanager.OpenKeyedConfig(&pgxmanager.KeyedPoolConfig[string]{
				ConfigFor: func(context.Context, string) (*pgx.ConnConfig, error) { return cc, nil },
				Config:    cfg,
				Pool:      pool.KeyedConfig{MaxSize: 1},
			})
			require.NoError(t, err)
			a, b := kp.For("a"), kp.For("b")
			runFailure(t, f, failureTarget{
				p: a,
				usable: func(t *testing.T, after string) {
					requireAnswers(t, b, kp.Pool().Stats, after) // b gets the budget a gave back
					requireAnswers(t, a, kp.Pool().Stats, after)
				},
				stats: kp.Pool().Stats,
				close: kp.Close,
			})
		})
	}
}

// ConfigFor's failures fail the connect of their key, and reach the query
// that asked for it; the other keys are not affected. No server is needed:
// nothing is dialled.
func TestKeyedConfigForFailuresFailTheConnect(t *testing.T) {
	cc, err := pgx.ParseConfig("postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err)
	withPoolParam := cc.Copy()
	withPoolParam.RuntimeParams["pool_max_conns"] = "4"
	boom := errors.New("no such tenant")
	kp, err := pgxmanager.OpenKeyed(func(_ context.Context, key string) (*pgx.ConnConfig, error) {
		switch key {
		case "error":
			return nil, boom
		case "nil":
			return nil, nil
		case "pool param":
			return withPoolParam, nil
		}
		panic("ConfigFor boom")
	}, pool.KeyedConfig{MaxSize: 2})
	require.NoError(t, err)
	ctx := ctxFor(t, 10*time.Second)
	defer func() { require.NoError(t, kp.Close(ctx)) }()

	require.ErrorIs(t, kp.For("error").Ping(ctx), boom)
	require.ErrorIs(t, kp.For("nil").Ping(ctx), pgxmanager.ErrInvalidConfig)
	err = kp.For("pool param").Ping(ctx)
	require.ErrorIs(t, err, pgxmanager.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "pool_max_conns")
	err = kp.For("panic").Ping(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ConfigFor panicked: ConfigFor boom")
	s := kp.Pool().Stats()
	assert.Zero(t, s.Live, "no connection made, no slot held")
	assert.EqualValues(t, 4, s.ConnectErrors)
}

// OpenKeyedConfig refuses a bad configuration with an error naming the
// field: its own, the Manager's (New's) and the keyed pool's
// (pool.NewKeyed's).
func TestOpenKeyedConfigNamesTheBadField(t *testing.T) {
	configFor := func(context.Context, string) (*pgx.ConnConfig, error) { return nil, nil }
	cc, err := pgx.ParseConfig("postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		cfg  *pgxmanager.KeyedPoolConfig[string]
		is   error
		says string
	}{
		{"nil", nil, pgxmanager.ErrInvalidConfig, "nil *KeyedPoolConfig"},
		{"no ConfigFor", &pgxmanager.KeyedPoolConfig[string]{}, pgxmanager.ErrInvalidConfig, "KeyedPoolConfig.ConfigFor"},
		{"ConnConfig", &pgxmanager.KeyedPoolConfig[string]{ConfigFor: configFor, Config: pgxmanager.Config{ConnConfig: cc}},
			pgxmanager.ErrInvalidConfig, "KeyedPoolConfig.ConnConfig"},
		{"Manager", &pgxmanager.KeyedPoolConfig[string]{ConfigFor: configFor, Config: pgxmanager.Config{PingTimeout: -1}},
			pgxmanager.ErrInvalidConfig, "Config.PingTimeout"},
		{"pool", &pgxmanager.KeyedPoolConfig[string]{ConfigFor: configFor, Pool: pool.KeyedConfig{MaxSize: 2, MaxSizePerKey: 3}},
			pool.ErrInvalidConfig, "KeyedConfig.MaxSizePerKey"},
	} {
		t.Run(c.name, func(t *testing.T) {
			kp, err := pgxmanager.OpenKeyedConfig(c.cfg)
			require.ErrorIs(t, err, c.is)
			assert.Contains(t, err.Error(), c.says)
			assert.Nil(t, kp)
		})
	}
}

// OpenKeyed gives a zero lifetime, idle time or health check period of the
// keyed pool's configuration pgxpool's default, as Open does, and a
// negative one means none.
func TestOpenKeyedHasPgxpoolDefaults(t *testing.T) {
	got := pgxmanager.KeyedDefaults(pool.KeyedConfig{})
	assert.Zero(t, got.MaxSize, "the budget has no default")
	assert.Equal(t, pgxmanager.DefaultMaxLifetime, got.PerKey.MaxLifetime)
	assert.Equal(t, pgxmanager.DefaultMaxIdleTime, got.PerKey.MaxIdleTime)
	assert.Equal(t, pgxmanager.DefaultHealthCheckPeriod, got.PerKey.HealthCheckPeriod)
	set := pool.KeyedConfig{MaxSize: 3, PerKey: pool.Config{MaxLifetime: time.Minute, MaxIdleTime: -1, HealthCheckPeriod: -1}}
	got = pgxmanager.ForKeyed(pgxmanager.KeyedDefaults(set))
	assert.Equal(t, pool.KeyedConfig{MaxSize: 3, PerKey: pool.Config{MaxLifetime: time.Minute}}, got, "set fields kept, none is pool's zero")

	kp, err := pgxmanager.OpenKeyed(func(context.Context, string) (*pgx.ConnConfig, error) { return nil, nil },
		pool.KeyedConfig{MaxSize: 3, PerKey: pool.Config{MaxIdleTime: -1, HealthCheckPeriod: -1}})
	require.NoError(t, err)
	assert.EqualValues(t, 3, kp.Stat().MaxConns())
	require.NoError(t, kp.Close(ctxFor(t, 10*time.Second)))
}

// OpenKeyed and OpenKeyedConfig require the budget, KeyedConfig.MaxSize, as
// pool.NewKeyed does: pgxpool's default is one database's, and a keyed
// pool's budget is that of all keys together. No server is needed.
func TestOpenKeyedRequiresMaxSize(t *testing.T) {
	configFor := func(context.Context, string) (*pgx.ConnConfig, error) { return nil, nil }
	open := map[string]func() (*pgxmanager.KeyedPool[string], error){
		"OpenKeyed, zero": func() (*pgxmanager.KeyedPool[string], error) {
			return pgxmanager.OpenKeyed(configFor, pool.KeyedConfig{MaxSizePerKey: 2})
		},
		"OpenKeyedConfig, negative": func() (*pgxmanager.KeyedPool[string], error) {
			return pgxmanager.OpenKeyedConfig(&pgxmanager.KeyedPoolConfig[string]{ConfigFor: configFor, Pool: pool.KeyedConfig{MaxSize: -1}})
		},
	}
	for name, open := range open {
		t.Run(name, func(t *testing.T) {
			kp, err := open()
			require.ErrorIs(t, err, pgxmanager.ErrInvalidConfig)
			require.ErrorIs(t, err, pool.ErrInvalidConfig)
			assert.Contains(t, err.Error(), "KeyedConfig.MaxSize must be >= 1")
			assert.Nil(t, kp)
		})
	}
}

// A key's Pool acts on its key: its Name is the keyed pool's, its Stats and
// Stat the key's (zero figures and MaxSizePerKey before its first connect);
// the keyed pool is closed as a whole, so a key's Close and Pool panic with
// the package's name. No server is needed: nothing is dialled.
func TestKeysPoolIsClosedOnlyWithItsKeyedPool(t *testing.T) {
	kp, err := pgxmanager.OpenKeyed(func(context.Context, string) (*pgx.ConnConfig, error) { return nil, nil },
		pool.KeyedConfig{MaxSize: 4, MaxSizePerKey: 2, PerKey: pool.Config{Name: "tenants"}})
	require.NoError(t, err)
	ctx := ctxFor(t, 10*time.Second)
	defer func() { require.NoError(t, kp.Close(ctx)) }()
	p := kp.For("acme")
	assert.Equal(t, "tenants", p.Name())
	assert.Equal(t, pool.Stats{MaxSize: 2}, p.Stats())
	assert.EqualValues(t, 2, p.Stat().MaxConns())
	assert.Zero(t, p.Stat().TotalConns())
	assert.PanicsWithValue(t, "pgxmanager: Close of a key's Pool (KeyedPool.For): close the KeyedPool",
		func() { _ = p.Close(ctx) })
	assert.PanicsWithValue(t, "pgxmanager: Pool of a key's Pool (KeyedPool.For): the keyed pool is KeyedPool.Pool",
		func() { p.Pool() })
	assert.Zero(t, kp.Pool().Len(), "no key has state")
}

// A key's Pool's PrepareConn refusals are bounded by the key's MaxSizePerKey, not by
// the key's figures of the moment: a refused connection is destroyed, and a
// key whose only connection was destroyed has no state left (its figures
// are zero). The call retries on new connections, as pgxpool does, until one
// is accepted.
func TestKeyedPrepareConnRefusalsRetryOnNewConnections(t *testing.T) {
	ts := newTenants(t, 1)
	var refused atomic.Int64
	kp := ts.open(t, pgxmanager.KeyedPoolConfig[string]{
		Options: pgxmanager.Options{PrepareConn: func(context.Context, *pgx.Conn) (bool, error) {
			return refused.Add(1) > 2, nil // the first two connections are refused
		}},
		Pool: pool.KeyedConfig{MaxSize: 3, MaxSizePerKey: 3},
	})
	ctx := ctxFor(t, 30*time.Second)
	requireRightDatabase(t, ctx, kp.For(ts.keys[0]), ts.keys[0])
	assert.EqualValues(t, 3, refused.Load(), "two refusals, then an accepted connection")
	assert.EqualValues(t, 3, kp.Pool().Stats().Created)
}
