package pgxmanager_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/pool"
)

// churnMaxSize is the MaxSize of the pools churning against a server whose
// max_connections leaves room for exactly that many connections of theirs.
const churnMaxSize = 4

// churnServer is a private PostgreSQL whose max_connections is
// churnMaxSize plus its superuser_reserved_connections plus one, the
// superuser's connection of the test (which CREATEs and samples): a role
// that is not a superuser (app) gets churnMaxSize connections and no more
// ("remaining connection slots are reserved", SQLSTATE 53300). It has
// databases of its own for keyed pools (keys).
type churnServer struct {
	pg       *privatePostgres
	appDSN   func(db string) string
	keys     []string
	sampler  *admin
	reserved int
}

func startChurnServer(t *testing.T, keys int) *churnServer {
	t.Helper()
	const reserved = 3
	pg := startPostgres(t, fmt.Sprintf("max_connections=%d", churnMaxSize+reserved+1),
		fmt.Sprintf("superuser_reserved_connections=%d", reserved))
	a := dialAdminAt(t, pg.dsn)
	ctx := ctxFor(t, 30*time.Second)
	_, err := a.c.Exec(ctx, "CREATE ROLE app LOGIN")
	require.NoError(t, err)
	cs := &churnServer{pg: pg, sampler: a, reserved: reserved}
	for i := range keys {
		db := fmt.Sprintf("tenant_%d", i)
		_, err := a.c.Exec(ctx, "CREATE DATABASE "+db)
		require.NoError(t, err)
		cs.keys = append(cs.keys, db)
	}
	cs.appDSN = func(db string) string {
		return strings.Replace(strings.Replace(pg.dsn, "postgres@", "app@", 1), "/postgres?", "/"+db+"?", 1)
	}
	return cs
}

// sample counts the app role's backends in pg_stat_activity, over and over
// until the function it returns is called, which returns the most it saw.
func (cs *churnServer) sample(t *testing.T) (stop func() (most, samples int)) {
	t.Helper()
	return sampleCount(t, cs.sampler, "SELECT count(*) FROM pg_stat_activity WHERE usename = 'app'")
}

// churn runs query from workers goroutines for d, and returns every error,
// counting those that are the server's refusal for want of a connection
// slot (SQLSTATE 53300, too_many_connections).
func churn(workers int, d time.Duration, query func(ctx context.Context, w, i int) error) (ops, tooMany int, errs []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for w := range workers {
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := query(ctx, w, i)
				cancel()
				mu.Lock()
				ops++
				if err != nil {
					var pe *pgconn.PgError
					if errors.As(err, &pe) && pe.Code == "53300" {
						tooMany++
					}
					if len(errs) < 5 {
						errs = append(errs, err)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ops, tooMany, errs
}

// A pool frees a closed connection's slot only once the server has let go
// of it (its backend has exited): against a server whose max_connections
// leaves the pool's role exactly MaxSize connections, a pool that closes a
// connection after every use, so that every query connects anew, is never
// refused for want of a slot, and pg_stat_activity never shows more than
// MaxSize of its backends.
func TestServerNeverSeesMoreThanMaxSizeUnderChurn(t *testing.T) {
	cs := startChurnServer(t, 6)
	t.Run("Pool", func(t *testing.T) {
		cfg, err := pgxmanager.ParsePoolConfig(cs.appDSN(cs.keys[0]))
		require.NoError(t, err)
		cfg.AfterRelease = func(*pgx.Conn) bool { return false } // every connection closed after one use
		cfg.Pool.MaxSize = churnMaxSize
		p := openConfig(t, cfg)
		stop := cs.sample(t)
		ops, tooMany, errs := churn(8, 2500*time.Millisecond, func(ctx context.Context, _, _ int) error {
			_, err := p.Exec(ctx, "SELECT 1")
			return err
		})
		most, samples := stop()
		s := p.Stat()
		t.Logf("%d queries, %d connects, %d forced closes; at most %d backends in %d samples",
			ops, s.NewConnsCount(), s.ForcedCloseCount(), most, samples)
		assert.Zero(t, tooMany, "queries refused by the server for want of a connection slot")
		assert.Empty(t, errs)
		assert.LessOrEqual(t, most, churnMaxSize, "the pool's backends at once, in pg_stat_activity")
		assert.Greater(t, s.NewConnsCount(), int64(churnMaxSize), "the pool churned through connections")
	})
	t.Run("KeyedPool", func(t *testing.T) {
		configs := map[string]*pgx.ConnConfig{}
		for _, key := range cs.keys {
			cc, err := pgx.ParseConfig(cs.appDSN(key))
			require.NoError(t, err)
			configs[key] = cc
		}
		kp, err := pgxmanager.OpenKeyed(func(_ context.Context, key string) (*pgx.ConnConfig, error) {
			return configs[key], nil
		}, pool.KeyedConfig{MaxSize: churnMaxSize, MaxSizePerKey: 2})
		require.NoError(t, err)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, kp.Close(ctx))
		})
		stop := cs.sample(t)
		// More keys than MaxSize: a key with no connection takes room from
		// another key's idle one, which is closed to make it.
		ops, tooMany, errs := churn(8, 2500*time.Millisecond, func(ctx context.Context, w, i int) error {
			key := cs.keys[rand.IntN(len(cs.keys))]
			var db string
			if err := kp.For(key).QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
				return err
			}
			if db != key {
				return fmt.Errorf("key %s ran on database %s", key, db)
			}
			return nil
		})
		most, samples := stop()
		s := kp.Pool().Stats()
		t.Logf("%d queries, %d connects, %d closes for room; at most %d backends in %d samples",
			ops, s.Connects, s.ClosedBy[pool.CloseEvict], most, samples)
		assert.Zero(t, tooMany, "queries refused by the server for want of a connection slot")
		assert.Empty(t, errs)
		assert.LessOrEqual(t, most, churnMaxSize, "the pool's backends at once, in pg_stat_activity")
		assert.Greater(t, s.Connects, uint64(churnMaxSize), "the keys took room from each other")
	})
}
