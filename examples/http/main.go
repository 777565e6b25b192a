// Command http is a net/http server that reads request bodies into, and
// builds responses in, bytepool.Buffers.
//
//	go run ./examples/http                          # from the repository root: a demo
//	go run ./http -listen 127.0.0.1:8080            # from examples/: serve until interrupted
//	curl -d 'hello, world' http://127.0.0.1:8080/upper
//
// Without -listen it starts on a free port, sends a few requests to itself,
// prints the answers and exits.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/poolkit/poolkit/bytepool"
)

func main() {
	listen := flag.String("listen", "", "serve on this address until interrupted (default: run a demo and exit)")
	flag.Parse()
	var err error
	if *listen != "" {
		err = serve(*listen)
	} else {
		err = demo(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "http example:", err)
		os.Exit(1)
	}
}

func newPool() (*bytepool.Pool, error) { return bytepool.New(bytepool.Config{}) }

// serve serves on addr until SIGINT or SIGTERM.
func serve(addr string) error {
	bp, err := newPool()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv := &http.Server{Addr: addr, Handler: newHandler(bp), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Fprintf(os.Stderr, "serving on %s (POST /upper, POST /count); interrupt to stop\n", addr)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// demo serves on a free port, sends a few requests, prints the answers.
func demo(w io.Writer) error {
	bp, err := newPool()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newHandler(bp), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	client := &http.Client{Timeout: 10 * time.Second}

	for _, req := range []struct{ path, body string }{
		{"/upper", "hello, bytepool"},
		{"/count", "one line\ntwo words? three\n"},
		{"/upper", strings.Repeat("a", 100_000)},
	} {
		resp, err := client.Post(base+req.path, "text/plain", strings.NewReader(req.body))
		if err != nil {
			return err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		shown := string(body)
		if len(shown) > 40 {
			shown = fmt.Sprintf("%s… (%d bytes)", shown[:20], len(body))
		}
		fmt.Fprintf(w, "POST %s: %d %s\n", req.path, resp.StatusCode, strings.TrimSuffix(shown, "\n"))
	}
	client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
