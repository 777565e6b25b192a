// Command postgres runs a small query workload against PostgreSQL over a
// poolkit pool of pgx connections, through the Pool facade of
// contrib/pgxmanager.
//
//	go run ./examples/postgres                   # from the repository root
//	go run ./postgres -dsn 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'   # from examples/
//
// The connection string comes from -dsn, else $POOLKIT_POSTGRES_DSN, else
// postgres://postgres@127.0.0.1:5432/test?sslmode=disable. It only reads: it
// creates no table.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/poolkit/poolkit/contrib/pgxmanager"
)

const defaultDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func main() {
	dsn := flag.String("dsn", "", "PostgreSQL connection string (default $POOLKIT_POSTGRES_DSN, else "+defaultDSN+")")
	flag.Parse()
	if *dsn == "" {
		*dsn = os.Getenv("POOLKIT_POSTGRES_DSN")
	}
	if *dsn == "" {
		*dsn = defaultDSN
	}
	if err := run(os.Stdout, *dsn); err != nil {
		fmt.Fprintln(os.Stderr, "postgres example:", err)
		os.Exit(1)
	}
}

const (
	maxSize  = 4
	workers  = 8
	requests = 25
)

func run(w io.Writer, dsn string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := "poolkit-example-" + strconv.Itoa(os.Getpid())
	cfg, err := pgxmanager.ParsePoolConfig(dsn)
	if err != nil {
		return err
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = name // names the connections in pg_stat_activity
	cfg.Pool.MaxSize = maxSize
	cfg.Pool.AcquireTimeout = 10 * time.Second
	cfg.Pool.ConnectTimeout = 5 * time.Second
	db, err := pgxmanager.OpenConfig(cfg)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())

	var hello string
	if err := db.QueryRow(ctx, "SELECT 'hello, ' || $1::text", "postgres").Scan(&hello); err != nil {
		return err
	}
	fmt.Fprintf(w, "SELECT: %s\n", hello)

	// Each worker asks the server to sum 1..n for its own n and checks it.
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for j := range requests {
				n := i*requests + j + 1
				var got int64
				if err := db.QueryRow(ctx, "SELECT sum(g)::int8 FROM generate_series(1, $1::int) AS g", n).Scan(&got); err != nil {
					errs <- err
					return
				}
				if want := int64(n * (n + 1) / 2); got != want {
					errs <- fmt.Errorf("sum(1..%d) = %d, want %d", n, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	fmt.Fprintf(w, "%d workers × %d queries: all sums correct\n", workers, requests)

	var n int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", name).Scan(&n); err != nil {
		return err
	}
	fmt.Fprintf(w, "server backends named %q: at most %d: %t\n", "poolkit-example-<pid>", maxSize, n <= maxSize)
	if err := db.Close(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "after Close: %d live\n", db.Stats().Live)
	return nil
}
