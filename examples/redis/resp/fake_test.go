package resp_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeServer speaks just enough RESP for the unit tests: PING → +PONG,
// CLIENT SETNAME → +OK, RAW <bytes> → <bytes> verbatim (any reply the test
// wants), anything else → an error reply. It counts PINGs.
type fakeServer struct {
	ln    net.Listener
	pings atomic.Int64
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startFake(t *testing.T) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &fakeServer{ln: ln}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() {
		ln.Close()
		s.killAll()
		s.wg.Wait()
	})
	return s
}

func (s *fakeServer) addr() string { return s.ln.Addr().String() }

// open returns how many connections the server has accepted and not killed.
func (s *fakeServer) open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// killAll closes every connection from the server's side.
func (s *fakeServer) killAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

func (s *fakeServer) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go s.handle(c)
	}
}

func (s *fakeServer) handle(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		var reply string
		switch {
		case args[0] == "PING":
			s.pings.Add(1)
			reply = "+PONG\r\n"
		case args[0] == "CLIENT" && len(args) == 3 && args[1] == "SETNAME":
			reply = "+OK\r\n"
		case args[0] == "RAW" && len(args) == 2:
			reply = args[1]
		default:
			reply = "-ERR unknown command '" + args[0] + "'\r\n"
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

// readCommand reads one array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	n, err := readHeader(r, '*')
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, errors.New("empty command")
	}
	args := make([]string, n)
	for i := range args {
		l, err := readHeader(r, '$')
		if err != nil {
			return nil, err
		}
		b := make([]byte, l+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:l])
	}
	return args, nil
}

func readHeader(r *bufio.Reader, kind byte) (int, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 4 || line[0] != kind {
		return 0, errors.New("bad header " + strconv.Quote(line))
	}
	return strconv.Atoi(line[1 : len(line)-2])
}
