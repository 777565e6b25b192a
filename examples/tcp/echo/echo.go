// Package echo is an in-process line-echo server for the examples, their
// tests and the end-to-end benchmarks: every line a client sends
// ('\n'-terminated) comes back unchanged. It uses the standard library
// only, so the example that starts it can be copied whole.
package echo

import (
	"bufio"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// maxLine bounds a line; a longer one closes the connection.
const maxLine = 64 << 10

// Server is a running line-echo server. Its methods are safe for concurrent
// use. Close stops it and waits for every goroutine it started.
type Server struct {
	ln       net.Listener
	accepted atomic.Int64
	wg       sync.WaitGroup

	mu     sync.Mutex            // guards conns and closed
	conns  map[net.Conn]struct{} // open server-side connections
	closed bool
}

// Listen starts a server on network ("tcp" or "unix") and address, e.g.
// "127.0.0.1:0" for a free port.
func Listen(network, address string) (*Server, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, conns: make(map[net.Conn]struct{})}
	s.wg.Add(1)
	go s.serve()
	return s, nil
}

// Addr returns the address clients dial.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Network returns the network the server listens on.
func (s *Server) Network() string { return s.ln.Addr().Network() }

// Accepted returns the number of connections accepted so far.
func (s *Server) Accepted() int64 { return s.accepted.Load() }

// Open returns the number of connections the server still holds open.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// KillAll closes every open connection from the server's side (a crash of
// the peer, as the clients see it) and returns how many it closed. The
// server keeps accepting new ones.
func (s *Server) KillAll() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.Close()
	}
	return len(s.conns)
}

// WaitOpen polls until at most n connections are open, or ctx ends (its
// error is returned then).
func (s *Server) WaitOpen(ctx context.Context, n int) error {
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for s.Open() > n {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// Close stops accepting, closes every connection and waits for the server's
// goroutines to exit. It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	var err error
	if first {
		err = s.ln.Close()
	}
	s.wg.Wait()
	return err
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.accepted.Add(1)
		s.wg.Add(1)
		s.mu.Unlock()
		go s.handle(c)
	}
}

// handle echoes lines until the client closes the connection or an error.
func (s *Server) handle(c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	r := bufio.NewReaderSize(c, 4096)
	w := bufio.NewWriterSize(c, 4096)
	var long []byte // a line longer than r's buffer, being assembled
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(line) > maxLine {
				return
			}
			long = append(long, line...)
			continue
		}
		if err != nil {
			return
		}
		if long != nil {
			line = append(long, line...)
			long = nil
		}
		if _, err := w.Write(line); err != nil {
			return
		}
		// Flush once the client has nothing more pipelined.
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}
