// Command tcp pools net.Conn connections with manager.Dialer against a
// line-echo server it starts in-process: it needs no set-up.
//
//	go run ./examples/tcp    # from the repository root
//	go run ./tcp             # from examples/
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/poolkit/poolkit/examples/tcp/echo"
	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tcp example:", err)
		os.Exit(1)
	}
}

const (
	maxSize  = 4
	workers  = 8
	requests = 25
)

// roundTrip sends line on the leased connection and reads the echo. A
// connection that fails is destroyed, any other released.
func roundTrip(ctx context.Context, p *pool.Pool[net.Conn], line string) (string, error) {
	l, err := p.Acquire(ctx)
	if err != nil {
		return "", err
	}
	c := l.Value()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	// A bufio.Reader per request is enough here: the server answers one
	// line per line, so nothing is left buffered once the echo is read.
	if _, err = io.WriteString(c, line+"\n"); err == nil {
		var got string
		got, err = bufio.NewReader(c).ReadString('\n')
		if err == nil {
			l.Release()
			return got[:len(got)-1], nil
		}
	}
	l.Destroy()
	return "", err
}

func run(w io.Writer) error {
	srv, err := echo.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer srv.Close()
	p, err := pool.New[net.Conn](
		manager.Dialer{Network: "tcp", Address: srv.Addr()},
		pool.Config{MaxSize: maxSize, AcquireTimeout: 10 * time.Second},
	)
	if err != nil {
		return err
	}
	defer p.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// One goroutine: the second request reuses the first one's connection.
	for _, line := range []string{"hello", "again"} {
		got, err := roundTrip(ctx, p, line)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "echo: %s\n", got)
	}
	fmt.Fprintf(w, "connections dialled: %d\n", srv.Accepted())

	// Many goroutines, a few connections.
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		wg.Go(func() {
			for j := range requests {
				line := "worker " + strconv.Itoa(i) + " request " + strconv.Itoa(j)
				got, err := roundTrip(ctx, p, line)
				if err == nil && got != line {
					err = fmt.Errorf("sent %q, got %q back", line, got)
				}
				if err != nil {
					errs <- err
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
	fmt.Fprintf(w, "%d workers × %d requests: all echoed\n", workers, requests)
	fmt.Fprintf(w, "connections dialled: at most %d: %t\n", maxSize, srv.Accepted() <= maxSize)

	// The server drops every connection; the pool notices on the next
	// Acquire (Dialer.Recycle peeks at the socket) and dials anew.
	srv.KillAll()
	if err := srv.WaitOpen(ctx, 0); err != nil {
		return err
	}
	got, err := roundTrip(ctx, p, "after the server dropped us")
	for i := 0; err != nil && i < maxSize; i++ {
		// The FIN came after Recycle looked: that connection is destroyed;
		// the next is checked anew.
		got, err = roundTrip(ctx, p, "after the server dropped us")
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "echo: %s\n", got)

	if err := p.Close(ctx); err != nil {
		return err
	}
	if err := srv.WaitOpen(ctx, 0); err != nil {
		return err
	}
	fmt.Fprintf(w, "after Close: %d live, %d open on the server\n", p.Stats().Live, srv.Open())
	return nil
}
