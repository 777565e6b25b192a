// Command consumer uses poolkit's modules as a program that depends on them
// does. .ci/consume copies it into a fresh module outside the repository,
// which gets every poolkit module at the release's version from the proxy
// directory .ci/release wrote. It exits non-zero, saying what failed, unless
// each module does what the README says, against the PostgreSQL server of
// POOLKIT_POSTGRES_DSN.
//
// Usage:
//
//	consumer VERSION
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/poolkit/poolkit/bytepool"
	"github.com/poolkit/poolkit/contrib/pgxmanager"
	"github.com/poolkit/poolkit/contrib/poolotel"
	"github.com/poolkit/poolkit/contrib/poolprom"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: consumer VERSION")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		os.Exit(1)
	}
}

func run(version string) error {
	if err := checkBuild(version); err != nil {
		return err
	}
	dsn := os.Getenv("POOLKIT_POSTGRES_DSN")
	if dsn == "" {
		return errors.New("POOLKIT_POSTGRES_DSN is not set: the pgxmanager check needs a PostgreSQL server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if err := usePool(ctx); err != nil {
		return fmt.Errorf("pool: %w", err)
	}
	if err := useBytepool(); err != nil {
		return fmt.Errorf("bytepool: %w", err)
	}
	db, err := pgxmanager.Open(dsn, pool.Config{MaxSize: 2})
	if err != nil {
		return fmt.Errorf("pgxmanager.Open: %w", err)
	}
	defer db.Close(context.Background())
	var n int
	if err := db.QueryRow(ctx, "SELECT $1::int + 1", 41).Scan(&n); err != nil {
		return fmt.Errorf("pgxmanager: QueryRow: %w", err)
	}
	if n != 42 {
		return fmt.Errorf("pgxmanager: SELECT 41 + 1 returned %d", n)
	}
	if err := usePoolprom(db); err != nil {
		return fmt.Errorf("poolprom: %w", err)
	}
	if err := usePoolotel(ctx, db); err != nil {
		return fmt.Errorf("poolotel: %w", err)
	}
	if err := db.Close(ctx); err != nil {
		return fmt.Errorf("pgxmanager: Close: %w", err)
	}
	fmt.Printf("consumer: pool, bytepool, pgxmanager, poolprom and poolotel at %s work from the proxy\n", version)
	return nil
}

// checkBuild fails unless the binary was built from poolkit modules at
// version, none of them replaced: fetched as a user fetches them.
func checkBuild(version string) error {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("no build information in the binary")
	}
	var seen []string
	for _, d := range bi.Deps {
		if !strings.HasPrefix(d.Path, "github.com/poolkit/poolkit") {
			continue
		}
		if d.Replace != nil {
			return fmt.Errorf("%s is replaced by %s %s", d.Path, d.Replace.Path, d.Replace.Version)
		}
		if d.Version != version {
			return fmt.Errorf("built with %s %s, not %s", d.Path, d.Version, version)
		}
		seen = append(seen, d.Path)
	}
	if len(seen) < 4 {
		return fmt.Errorf("built with the poolkit modules %v only", seen)
	}
	return nil
}

type conn struct{ id int64 }

func usePool(ctx context.Context) error {
	// Connect and Close run on the pool's goroutines.
	var made, closed atomic.Int64
	mgr := manager.Funcs[*conn]{
		ConnectFunc: func(context.Context) (*conn, error) { return &conn{id: made.Add(1)}, nil },
		CloseFunc:   func(*conn) error { closed.Add(1); return nil },
	}
	p, err := pool.New[*conn](mgr, pool.Config{MaxSize: 2})
	if err != nil {
		return err
	}
	for range 3 {
		l, err := p.Acquire(ctx)
		if err != nil {
			return err
		}
		if l.Value().id != 1 {
			return fmt.Errorf("acquired object %d; the one idle object was 1", l.Value().id)
		}
		l.Release()
	}
	s := p.Stats()
	if s.Acquires != 3 || s.Created != 1 {
		return fmt.Errorf("Stats: %d acquires, %d created; want 3 and 1", s.Acquires, s.Created)
	}
	if err := p.Close(ctx); err != nil {
		return err
	}
	if n := closed.Load(); n != 1 {
		return fmt.Errorf("Close closed %d objects, want 1", n)
	}
	return nil
}

func useBytepool() error {
	b := bytepool.Get(1000)
	if len(b) != 1000 || cap(b) < 1000 {
		return fmt.Errorf("Get(1000): len %d, cap %d", len(b), cap(b))
	}
	bytepool.Put(b)
	var buf bytepool.Buffer
	fmt.Fprintf(&buf, "%d bytes", 1000)
	if got := buf.String(); got != "1000 bytes" {
		return fmt.Errorf("Buffer holds %q", got)
	}
	buf.Free()
	return nil
}

func usePoolprom(db *pgxmanager.Pool) error {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(poolprom.NewPoolCollector(db, poolprom.Options{ConstLabels: prometheus.Labels{"pool": "db"}}))
	reg.MustRegister(poolprom.NewBytesCollector(bytepool.Default(), poolprom.Options{}))
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	want := map[string]float64{"poolkit_pool_acquires_total": 1, "poolkit_pool_max_connections": 2}
	found := map[string]bool{}
	for _, f := range families {
		found[f.GetName()] = true
		if w, ok := want[f.GetName()]; ok {
			m := f.GetMetric()[0]
			got := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			if got != w {
				return fmt.Errorf("%s = %v, want %v", f.GetName(), got, w)
			}
		}
	}
	for _, name := range []string{"poolkit_pool_acquires_total", "poolkit_pool_max_connections", "poolkit_pool_blocked_acquire_seconds", "poolkit_bytepool_retained_bytes"} {
		if !found[name] {
			return fmt.Errorf("no %s gathered", name)
		}
	}
	return nil
}

func usePoolotel(ctx context.Context, db *pgxmanager.Pool) error {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())
	meter := provider.Meter("consumer")
	rp, err := poolotel.ObservePool(meter, db, poolotel.Options{Name: "db"})
	if err != nil {
		return err
	}
	defer rp.Unregister()
	rb, err := poolotel.ObserveBytes(meter, bytepool.Default(), poolotel.Options{Name: "default"})
	if err != nil {
		return err
	}
	defer rb.Unregister()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	found := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found[m.Name] = true
			if m.Name == "db.client.connection.max" {
				s, ok := m.Data.(metricdata.Sum[int64])
				if !ok || len(s.DataPoints) != 1 || s.DataPoints[0].Value != 2 {
					return fmt.Errorf("db.client.connection.max: %+v, want one point of 2", m.Data)
				}
			}
		}
	}
	for _, name := range []string{"db.client.connection.count", "db.client.connection.max", "poolkit.pool.acquires", "poolkit.bytepool.retained"} {
		if !found[name] {
			return fmt.Errorf("no %s collected", name)
		}
	}
	return nil
}
