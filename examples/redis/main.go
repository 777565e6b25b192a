// Command redis runs a small workload (PING, SET, GET, INCR) against a Redis
// server over a poolkit pool of connections, through the example client in
// package resp.
//
//	go run ./examples/redis                      # from the repository root
//	go run ./redis -addr 127.0.0.1:6379          # from examples/
//
// The address comes from -addr, else $POOLKIT_REDIS_ADDR, else
// 127.0.0.1:6379. Its keys are prefixed "poolkit:example:<pid>:" and
// deleted at the end.
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

	"github.com/poolkit/poolkit/examples/redis/resp"
	"github.com/poolkit/poolkit/pool"
)

func main() {
	addr := flag.String("addr", "", "Redis host:port (default $POOLKIT_REDIS_ADDR, else 127.0.0.1:6379)")
	flag.Parse()
	if *addr == "" {
		*addr = os.Getenv("POOLKIT_REDIS_ADDR")
	}
	if *addr == "" {
		*addr = "127.0.0.1:6379"
	}
	if err := run(os.Stdout, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "redis example:", err)
		os.Exit(1)
	}
}

const (
	maxSize  = 4
	workers  = 8
	requests = 25
)

func run(w io.Writer, addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := "poolkit:example:" + strconv.Itoa(os.Getpid()) + ":"
	c, err := resp.NewClient(resp.Manager{
		Addr:        addr,
		Name:        "poolkit-example-" + strconv.Itoa(os.Getpid()),
		DialTimeout: 5 * time.Second,
	}, pool.Config{MaxSize: maxSize, AcquireTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer c.Close(context.Background())

	if err := c.Ping(ctx); err != nil {
		return fmt.Errorf("PING %s: %w", addr, err)
	}
	fmt.Fprintln(w, "PING: PONG")

	key := prefix + "greeting"
	if err := c.Set(ctx, key, "hello"); err != nil {
		return err
	}
	v, _, err := c.Get(ctx, key)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "SET then GET: %s\n", v)

	// Workers share a counter and each keeps a key of its own.
	counter := prefix + "counter"
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			own := prefix + "worker:" + strconv.Itoa(i)
			for j := range requests {
				if _, err := c.Incr(ctx, counter); err != nil {
					errs <- err
					return
				}
				want := strconv.Itoa(j)
				if err := c.Set(ctx, own, want); err != nil {
					errs <- err
					return
				}
				if got, _, err := c.Get(ctx, own); err != nil || got != want {
					errs <- fmt.Errorf("GET %s = %q, %v; want %q", own, got, err, want)
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
	n, _, err := c.Get(ctx, counter)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "INCR by %d workers × %d: %s\n", workers, requests, n)

	keys := []string{key, counter}
	for i := range workers {
		keys = append(keys, prefix+"worker:"+strconv.Itoa(i))
	}
	if _, err := c.Del(ctx, keys...); err != nil {
		return err
	}
	s := c.Stats()
	fmt.Fprintf(w, "connections made: at most %d: %t\n", maxSize, s.Created <= maxSize)
	if err := c.Close(ctx); err != nil {
		return err
	}
	fmt.Fprintf(w, "after Close: %d live\n", c.Stats().Live)
	return nil
}
