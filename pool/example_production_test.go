package pool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// Warm connects MinIdle objects at start-up (at least one), so that a
// service whose database is unreachable fails its start, at once, instead of
// its first requests.
func ExamplePool_Warm() {
	up := &sessions{}
	p, _ := pool.New[*session](up, pool.Config{MaxSize: 8, MinIdle: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Warm(ctx); err != nil {
		fmt.Println("start-up failed:", err)
		return
	}
	fmt.Println("ready, connections:", p.Stats().Live >= 3)
	_ = p.Close(context.Background())

	down := manager.Funcs[*session]{ConnectFunc: func(context.Context) (*session, error) {
		return nil, errors.New("connection refused")
	}}
	p, _ = pool.New[*session](down, pool.Config{MaxSize: 8, MinIdle: 3})
	if err := p.Warm(ctx); err != nil { // the first connect error, at once
		fmt.Println("start-up failed:", err)
	}
	_ = p.Close(context.Background())
	// Output:
	// ready, connections: true
	// start-up failed: pool: Warm: connect: connection refused
}

// leakReport is an Observer that prints leak reports (NopObserver supplies
// the other methods).
type leakReport struct {
	pool.NopObserver
	found chan struct{}
}

func (r leakReport) Leak(_ context.Context, ev pool.LeakEvent) {
	caller, _, _ := strings.Cut(ev.Stack, "\n") // the function that called Acquire
	fmt.Printf("object %d held for more than 20ms, taken by %s\n", ev.ID, caller)
	close(r.found)
}

// handleRequest holds its lease far too long (say, across a slow call).
func handleRequest(p *pool.Pool[*session]) pool.Lease[*session] {
	l, _ := p.Acquire(context.Background())
	return l
}

// With LeakThreshold set, a lease held longer is reported once, with the
// stack of the Acquire that took it.
func ExampleConfig_leakThreshold() {
	r := leakReport{found: make(chan struct{})}
	p, _ := pool.New[*session](&sessions{}, pool.Config{MaxSize: 2, LeakThreshold: 20 * time.Millisecond, Observer: r})
	l := handleRequest(p)
	<-r.found
	fmt.Println("leaks:", p.Stats().Leaks)
	l.Release()
	_ = p.Close(context.Background())
	// Output:
	// object 1 held for more than 20ms, taken by github.com/poolkit/poolkit/pool_test.handleRequest
	// leaks: 1
}

// The stock Observer logs through log/slog: here connects and closes at
// Debug (times are left out, to keep the output stable).
func ExampleNewSlogObserver() {
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			switch a.Key {
			case slog.TimeKey, "duration", "age":
				return slog.Attr{}
			}
			return a
		}})
	p, _ := pool.New[*session](&sessions{}, pool.Config{MaxSize: 2,
		Observer: pool.NewSlogObserver(slog.New(h), 100*time.Millisecond)})
	l, _ := p.Acquire(context.Background())
	l.Destroy()
	_ = p.Close(context.Background())
	// Output:
	// level=DEBUG msg="pool: connected" id=1
	// level=DEBUG msg="pool: closed" reason=destroy id=1
}
