package pgxmanager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/poolkit/poolkit/manager"
)

// Defaults for the zero values of [Config].
const (
	// DefaultPingAfter is [Config.PingAfter]'s default: Recycle pings a
	// connection idle for a second or more, as pgxpool does.
	DefaultPingAfter = time.Second
	// DefaultPingTimeout is [Config.PingTimeout]'s default.
	DefaultPingTimeout = 5 * time.Second
	// DefaultCloseTimeout is [Config.CloseTimeout]'s default.
	DefaultCloseTimeout = 5 * time.Second
)

// ErrNotReusable is matched ([errors.Is]) by every error Recycle and
// CheckRelease return for a connection that must not be handed out again.
var ErrNotReusable = errors.New("pgxmanager: connection not reusable")

// ErrInvalidConfig is matched by every error New returns for a bad [Config].
var ErrInvalidConfig = errors.New("pgxmanager: invalid config")

// Config configures a [Manager]. Zero values mean the documented defaults; New
// returns an error naming the field for any invalid value.
type Config struct {
	// ConnConfig is what pgx.ConnectConfig takes; it must come from
	// pgx.ParseConfig (or ParseConfig here). Each Connect uses a copy.
	// Required.
	ConnConfig *pgx.ConnConfig
	// AfterConnect, if set, runs on each new connection before the pool
	// sees it, under Connect's context: session settings, prepared
	// statements, type registrations. An error closes the connection and
	// fails the connect.
	AfterConnect func(ctx context.Context, c *pgx.Conn) error
	// PingAfter: Recycle pings (one round trip) a connection idle at least
	// this long before handing it out again. 0: DefaultPingAfter; negative:
	// never (the checks without a round trip still run).
	PingAfter time.Duration
	// PingTimeout bounds each ping Recycle sends, on top of the acquirer's
	// context. 0: DefaultPingTimeout. Negative is invalid.
	PingTimeout time.Duration
	// CloseTimeout bounds Close: the polite goodbye (a Terminate message)
	// before the socket is closed regardless. 0: DefaultCloseTimeout.
	// Negative is invalid.
	CloseTimeout time.Duration
}

// ParseConfig parses a connection string (URL or key=value, as
// pgx.ParseConfig) into a [Config] with the defaults.
func ParseConfig(connString string) (Config, error) {
	cc, err := pgx.ParseConfig(connString)
	if err != nil {
		return Config{}, err
	}
	return Config{ConnConfig: cc}, nil
}

// Manager is a manager.Manager[*pgx.Conn] that also implements
// [manager.ReleaseChecker]: Connect opens a connection (then runs AfterConnect),
// Recycle checks it before each reuse, CheckRelease refuses one released in
// a state the next user must not inherit, and Close closes it within
// CloseTimeout. It is immutable once made and safe for concurrent use.
type Manager struct {
	cfg Config // defaults filled in; never written after New
}

var (
	_ manager.Manager[*pgx.Conn]        = (*Manager)(nil)
	_ manager.ReleaseChecker[*pgx.Conn] = (*Manager)(nil)
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: Config."+format, append([]any{ErrInvalidConfig}, args...)...)
}

// New returns a [Manager] for cfg. It returns an error matching
// [ErrInvalidConfig], naming the field, if cfg is invalid.
func New(cfg Config) (*Manager, error) {
	switch {
	case cfg.ConnConfig == nil:
		return nil, invalid("ConnConfig is nil (use ParseConfig or pgx.ParseConfig)")
	case cfg.PingTimeout < 0:
		return nil, invalid("PingTimeout must be >= 0, got %v", cfg.PingTimeout)
	case cfg.CloseTimeout < 0:
		return nil, invalid("CloseTimeout must be >= 0, got %v", cfg.CloseTimeout)
	}
	if cfg.PingAfter == 0 {
		cfg.PingAfter = DefaultPingAfter
	}
	if cfg.PingTimeout == 0 {
		cfg.PingTimeout = DefaultPingTimeout
	}
	if cfg.CloseTimeout == 0 {
		cfg.CloseTimeout = DefaultCloseTimeout
	}
	return &Manager{cfg: cfg}, nil
}

// Connect opens a connection under ctx (which bounds the whole start-up:
// dial, TLS, authentication, AfterConnect) and runs AfterConnect on it. It
// returns pgx's error, or AfterConnect's wrapped, after closing the
// connection.
func (m *Manager) Connect(ctx context.Context) (*pgx.Conn, error) {
	c, err := pgx.ConnectConfig(ctx, m.cfg.ConnConfig)
	if err != nil {
		return nil, err
	}
	if m.cfg.AfterConnect != nil {
		if err := m.cfg.AfterConnect(ctx, c); err != nil {
			_ = m.Close(c)
			return nil, fmt.Errorf("pgxmanager: AfterConnect: %w", err)
		}
	}
	return c, nil
}

// doneCtx is a context that has ended: SyncConn under it returns at once,
// nil if the connection needs no round trip to be in step, else an error.
var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// Recycle reports whether c may be handed out again. Every error it returns
// matches [ErrNotReusable].
//
// First the checks of CheckRelease, with no I/O. Then, if c has been idle
// for less than PingAfter (by met.LastUsed, which the pool records on a
// coarse clock), a check with no round trip: a non-blocking peek at the
// socket, which finds a connection the server has closed or sent something
// unasked (pg_terminate_backend sends a FATAL error, then closes). Otherwise,
// a ping: one round trip, under ctx and PingTimeout, whichever ends first.
//
// The peek is safe with pgconn's background reader. pgconn starts that
// reader when a write is slow (15 ms) and stops it only after its next read
// returns, so on an idle connection it may stay parked in a read that holds
// the socket's read lock: a plain peek would wait for it for ever. Recycle
// peeks only when pgconn.PgConn.SyncConn, asked under a context that has
// already ended, reports that no reader runs and nothing is buffered; when
// one runs, Recycle pings instead, and the ping's reply ends the parked read.
// Over TLS the socket cannot be peeked (see [manager.Dialer.Recycle]): only
// the ping after PingAfter checks the connection.
//
// A connection with unread data (the server's notifications of a LISTEN, a
// notice sent unasked) fails the peek and is closed rather than guessed at.
// When the ping fails because ctx ended, the error matches ctx's error too.
func (m *Manager) Recycle(ctx context.Context, c *pgx.Conn, met manager.Metrics) error {
	if err := m.CheckRelease(c); err != nil {
		return err
	}
	pc := c.PgConn()
	if m.cfg.PingAfter < 0 || time.Since(met.LastUsed) < m.cfg.PingAfter {
		if pc.SyncConn(doneCtx) == nil {
			if err := (manager.Dialer{}).Recycle(ctx, pc.Conn(), met); err != nil {
				return fmt.Errorf("%w: %w", ErrNotReusable, err)
			}
			return nil
		}
		// pgconn's background reader may hold the socket: ping.
	}
	pctx, cancel := context.WithTimeout(ctx, m.cfg.PingTimeout)
	defer cancel()
	if err := pc.Ping(pctx); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%w: ping: %w (%w)", ErrNotReusable, cerr, err)
		}
		return fmt.Errorf("%w: ping: %w", ErrNotReusable, err)
	}
	return nil
}

// Errors of CheckRelease, built once.
var (
	errClosed = fmt.Errorf("%w: closed", ErrNotReusable)
	errBusy   = fmt.Errorf("%w: busy (a result not read to its end)", ErrNotReusable)
)

// CheckRelease refuses a connection that is closed, busy (a query's result
// not read to its end, a batch not closed) or not idle outside a
// transaction (a transaction left open, or failed and not rolled back): the
// pool closes it instead of handing it to the next user.
func (*Manager) CheckRelease(c *pgx.Conn) error {
	pc := c.PgConn()
	switch {
	case pc.IsClosed():
		return errClosed
	case pc.IsBusy():
		return errBusy
	case pc.TxStatus() != 'I':
		return fmt.Errorf("%w: transaction status %q (a transaction left open)", ErrNotReusable, pc.TxStatus())
	}
	return nil
}

// Close closes c: a Terminate message, then the socket, within
// CloseTimeout. A connection pgconn already closed on an error (a query cut
// short by its context, a broken socket) may still be cleaning up on a
// goroutine of pgconn's (a cancel request, draining the socket): Close waits
// for that too, up to CloseTimeout, so that the pool frees the slot only
// once the server's backend is on its way out; past it, Close closes the
// socket itself and returns. The socket is closed whatever the error.
func (m *Manager) Close(c *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.CloseTimeout)
	defer cancel()
	err := c.Close(ctx)
	pc := c.PgConn()
	select {
	case <-pc.CleanupDone():
	case <-ctx.Done():
		_ = pc.Conn().Close() // ends pgconn's drain of the socket
	}
	return err
}
