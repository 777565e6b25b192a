// Package resp is a small Redis client for the poolkit examples: the RESP2
// protocol over one connection (Conn), a pool.Manager for such connections
// (Manager), and a pooled client with PING, SET, GET and INCR that retries a
// command once when its connection breaks under it (Client).
//
// It is an example, not a full client: no pipelining, no pub/sub, no TLS, no
// AUTH, no cluster.
package resp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// Error is an error reply from the server ("-ERR ..."). The connection stays
// usable after one.
type Error string

func (e Error) Error() string { return "resp: server error: " + string(e) }

// ErrBroken is matched (errors.Is) by every error of a command whose
// connection failed: an I/O error, a timeout, a protocol violation. The
// connection must not be used again; the underlying error is wrapped too.
var ErrBroken = errors.New("resp: connection broken")

// errProtocol is a reply that does not parse.
var errProtocol = errors.New("resp: protocol error")

// Reply is one RESP2 reply. Kind is the reply's type byte: '+' (a status:
// Str), ':' (an integer: Int), '$' (a bulk string: Str, or Nil) or '*' (an
// array: Array, or Nil). Error replies are returned as Error, not as a Reply.
type Reply struct {
	Kind  byte
	Str   string
	Int   int64
	Nil   bool
	Array []Reply
}

// Conn is one connection to a Redis server. It is not safe for concurrent
// use: a pool gives it to one holder at a time. Once a command has failed
// with ErrBroken, the Conn is broken for good and must be closed.
type Conn struct {
	nc     net.Conn
	br     *bufio.Reader
	bw     *bufio.Writer
	broken error // the first I/O failure, or nil
}

// maxBulk bounds a bulk string in a reply.
const maxBulk = 512 << 20

// NewConn wraps an established connection to a Redis server.
func NewConn(nc net.Conn) *Conn {
	return &Conn{nc: nc, br: bufio.NewReader(nc), bw: bufio.NewWriter(nc)}
}

// NetConn returns the underlying connection (for a liveness peek).
func (c *Conn) NetConn() net.Conn { return c.nc }

// Broken reports whether a command failed on c's connection.
func (c *Conn) Broken() bool { return c.broken != nil }

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Do sends one command and reads its reply. ctx bounds both: its deadline
// becomes the socket's, and its cancellation interrupts the I/O. It returns
// an Error for an error reply (c stays usable), and an error matching
// ErrBroken (and wrapping the cause: an I/O error, ctx.Err()) if the
// connection failed, after which c is broken. If ctx has ended before Do
// starts, Do returns ctx.Err() and sends nothing; c stays usable.
func (c *Conn) Do(ctx context.Context, args ...string) (Reply, error) {
	if c.broken != nil {
		return Reply{}, fmt.Errorf("%w: %w", ErrBroken, c.broken)
	}
	if len(args) == 0 {
		return Reply{}, errors.New("resp: Do: no command")
	}
	if err := ctx.Err(); err != nil {
		return Reply{}, err // nothing sent: c stays usable
	}
	dl, _ := ctx.Deadline()
	if err := c.nc.SetDeadline(dl); err != nil {
		return Reply{}, c.fail(ctx, err)
	}
	// Cancellation interrupts the I/O through a past deadline. If the
	// interrupt has started, wait for it, so that it cannot land on the
	// next command.
	interrupted := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		c.nc.SetDeadline(time.Unix(1, 0))
		close(interrupted)
	})
	defer func() {
		if !stop() {
			<-interrupted
		}
	}()

	if err := c.write(args); err != nil {
		return Reply{}, c.fail(ctx, err)
	}
	r, err := c.read(0)
	if err != nil {
		var se Error
		if errors.As(err, &se) {
			return Reply{}, se
		}
		return Reply{}, c.fail(ctx, err)
	}
	return r, nil
}

// fail marks c broken with err (ctx's error instead, if ctx ended: the
// deadline it set is why the I/O failed).
func (c *Conn) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	c.broken = err
	return fmt.Errorf("%w: %w", ErrBroken, err)
}

func (c *Conn) write(args []string) error {
	w := c.bw
	w.WriteByte('*')
	w.WriteString(strconv.Itoa(len(args)))
	w.WriteString("\r\n")
	for _, a := range args {
		w.WriteByte('$')
		w.WriteString(strconv.Itoa(len(a)))
		w.WriteString("\r\n")
		w.WriteString(a)
		w.WriteString("\r\n")
	}
	return w.Flush()
}

// read reads one reply; an error reply nested in an array is returned as the
// array's element's error.
func (c *Conn) read(depth int) (Reply, error) {
	if depth > 8 {
		return Reply{}, fmt.Errorf("%w: arrays nested too deep", errProtocol)
	}
	line, err := c.line()
	if err != nil {
		return Reply{}, err
	}
	if len(line) == 0 {
		return Reply{}, fmt.Errorf("%w: empty line", errProtocol)
	}
	kind, rest := line[0], line[1:]
	switch kind {
	case '+':
		return Reply{Kind: kind, Str: string(rest)}, nil
	case '-':
		return Reply{}, Error(rest)
	case ':':
		n, err := strconv.ParseInt(string(rest), 10, 64)
		if err != nil {
			return Reply{}, fmt.Errorf("%w: bad integer %q", errProtocol, rest)
		}
		return Reply{Kind: kind, Int: n}, nil
	case '$':
		n, err := strconv.Atoi(string(rest))
		if err != nil || n < -1 || n > maxBulk {
			return Reply{}, fmt.Errorf("%w: bad bulk length %q", errProtocol, rest)
		}
		if n == -1 {
			return Reply{Kind: kind, Nil: true}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(c.br, buf); err != nil {
			return Reply{}, err
		}
		if buf[n] != '\r' || buf[n+1] != '\n' {
			return Reply{}, fmt.Errorf("%w: bulk string not terminated by CRLF", errProtocol)
		}
		return Reply{Kind: kind, Str: string(buf[:n])}, nil
	case '*':
		n, err := strconv.Atoi(string(rest))
		if err != nil || n < -1 || n > 1<<20 {
			return Reply{}, fmt.Errorf("%w: bad array length %q", errProtocol, rest)
		}
		if n == -1 {
			return Reply{Kind: kind, Nil: true}, nil
		}
		r := Reply{Kind: kind, Array: make([]Reply, n)}
		var firstErr Error
		for i := range r.Array {
			e, err := c.read(depth + 1)
			var se Error
			switch {
			case errors.As(err, &se):
				if firstErr == "" {
					firstErr = se
				}
			case err != nil:
				return Reply{}, err
			}
			r.Array[i] = e
		}
		if firstErr != "" {
			return Reply{}, firstErr
		}
		return r, nil
	}
	return Reply{}, fmt.Errorf("%w: unknown reply type %q", errProtocol, kind)
}

// line reads one CRLF-terminated line, without the CRLF.
func (c *Conn) line() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%w: line too long", errProtocol)
		}
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("%w: line not terminated by CRLF", errProtocol)
	}
	return line[:len(line)-2], nil
}
