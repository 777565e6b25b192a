package resp

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/poolkit/poolkit/pool"
)

// Client runs commands over a pool of connections to one server. It is safe
// for concurrent use.
//
// A command whose connection breaks under it (the server killed it, a reset)
// is retried once, on another connection: the broken one is destroyed, and
// the retry acquires again (an idle connection that passes Recycle, or a new
// one). A retry is at-least-once: if the server ran the command but its reply
// was lost, the command runs twice, which matters for INCR (not for PING,
// GET, SET). A command is not retried when its context has ended, on an error
// reply, or when Acquire fails.
type Client struct {
	pool    *pool.Pool[*Conn]
	retries atomic.Uint64
}

// NewClient returns a Client over a pool of connections made by m. cfg is
// the pool's configuration; New's error (naming a bad field) is returned.
func NewClient(m Manager, cfg pool.Config) (*Client, error) {
	p, err := pool.New[*Conn](m, cfg)
	if err != nil {
		return nil, err
	}
	return &Client{pool: p}, nil
}

// Do runs one command, with one retry on a broken connection (see Client).
func (c *Client) Do(ctx context.Context, args ...string) (Reply, error) {
	r, err := c.try(ctx, args)
	if errors.Is(err, ErrBroken) && ctx.Err() == nil {
		c.retries.Add(1)
		r, err = c.try(ctx, args)
	}
	return r, err
}

// try runs args on one pooled connection: it releases the connection after
// a reply (an error reply included) and destroys it if it broke.
func (c *Client) try(ctx context.Context, args []string) (Reply, error) {
	l, err := c.pool.Acquire(ctx)
	if err != nil {
		return Reply{}, err
	}
	conn := l.Value()
	r, err := conn.Do(ctx, args...)
	if conn.Broken() {
		l.Destroy()
	} else {
		l.Release()
	}
	return r, err
}

// Retries returns how many commands were retried after their connection
// broke.
func (c *Client) Retries() uint64 { return c.retries.Load() }

// Stats returns the pool's statistics.
func (c *Client) Stats() pool.Stats { return c.pool.Stats() }

// Close closes the pool (see pool.Pool.Close): it returns once every
// connection is closed, or ctx's error.
func (c *Client) Close(ctx context.Context) error { return c.pool.Close(ctx) }

// Ping sends PING and checks the answer.
func (c *Client) Ping(ctx context.Context) error {
	return pong(c.Do(ctx, "PING"))
}

// pong checks the answer to a PING.
func pong(r Reply, err error) error {
	if err != nil {
		return err
	}
	if r.Str != "PONG" {
		return fmt.Errorf("resp: PING answered %q", r.Str)
	}
	return nil
}

// Set sets key to value.
func (c *Client) Set(ctx context.Context, key, value string) error {
	_, err := c.Do(ctx, "SET", key, value)
	return err
}

// Get returns key's value; ok is false if the key does not exist.
func (c *Client) Get(ctx context.Context, key string) (value string, ok bool, err error) {
	r, err := c.Do(ctx, "GET", key)
	if err != nil || r.Nil {
		return "", false, err
	}
	return r.Str, true, nil
}

// Incr increments the integer at key and returns the new value. Its retry is
// at-least-once (see Client).
func (c *Client) Incr(ctx context.Context, key string) (int64, error) {
	r, err := c.Do(ctx, "INCR", key)
	if err != nil {
		return 0, err
	}
	if r.Kind != ':' {
		return 0, fmt.Errorf("resp: INCR answered a %q reply", r.Kind)
	}
	return r.Int, nil
}

// Del deletes keys and returns how many existed.
func (c *Client) Del(ctx context.Context, keys ...string) (int64, error) {
	r, err := c.Do(ctx, append([]string{"DEL"}, keys...)...)
	if err != nil {
		return 0, err
	}
	return r.Int, nil
}
