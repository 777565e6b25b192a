package pgxmanager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// The defaults of Config's zero values, which its fields' docs give.
const (
	// defaultPingAfter: Recycle pings a connection idle for a second or
	// more, as pgxpool does.
	defaultPingAfter   = time.Second
	defaultPingTimeout = 5 * time.Second
	// defaultCloseTimeout: a connection's close (a Terminate message
	// written, the server's backend gone) takes a millisecond or two unless
	// the server has stopped answering.
	defaultCloseTimeout = 250 * time.Millisecond
)

// errNotReusable is matched by every error Recycle and CheckRelease return
// for a connection that must not be handed out again (the tests tell these
// errors from others by it).
var errNotReusable = errors.New("pgxmanager: connection not reusable")

// ErrInvalidConfig is matched (errors.Is) by every error of a bad
// configuration that the package returns: from New, ParsePoolConfig (a
// connection string that does not parse, or a bad pool_* value), Open,
// OpenConfig, OpenKeyed and OpenKeyedConfig, and a KeyedPool's connect when
// KeyedPoolConfig.ConfigFor gives a configuration it cannot use. Each such
// error matches pool.ErrInvalidConfig too, the pool's own included (a bad
// field of PoolConfig.Pool), and names what is wrong.
var ErrInvalidConfig error = invalidConfig{}

// invalidConfig is ErrInvalidConfig's type: it matches pool.ErrInvalidConfig
// as well, and so does every error that wraps it.
type invalidConfig struct{}

func (invalidConfig) Error() string { return "pgxmanager: invalid config" }

func (invalidConfig) Is(target error) bool { return target == pool.ErrInvalidConfig }

// configError is a configuration error of pool's or pgx's, returned with
// its message and its chain, and made to match ErrInvalidConfig and
// pool.ErrInvalidConfig both.
type configError struct{ err error }

func (e configError) Error() string { return e.err.Error() }

func (e configError) Unwrap() error { return e.err }

func (e configError) Is(target error) bool {
	return target == ErrInvalidConfig || target == pool.ErrInvalidConfig
}

// asConfigError returns err, pool.New's or pool.NewKeyed's, as a
// configError when it is a configuration error.
func asConfigError(err error) error {
	if errors.Is(err, pool.ErrInvalidConfig) {
		return configError{err}
	}
	return err
}

// ShouldPingParams are what Config.ShouldPing decides on.
type ShouldPingParams struct {
	Conn *pgx.Conn
	// IdleDuration is how long the connection has been idle, from its last
	// release (to the resolution of the pool's coarse clock: never less than
	// the true idle time).
	IdleDuration time.Duration
}

// Config configures a Manager. Zero values mean the documented defaults; New
// returns an error naming the field for any invalid value. The hooks have
// pgxpool.Config's names and meanings; an unset hook costs nothing.
type Config struct {
	// ConnConfig is what pgx.ConnectConfig takes; it must come from
	// pgx.ParseConfig (or ParsePoolConfig here, which also takes pgxpool's
	// pool_* parameters out of it: pgx.ParseConfig leaves them among the
	// run-time parameters, which the server refuses, and New refuses them
	// too). Required.
	ConnConfig *pgx.ConnConfig
	// BeforeConnect, if set, runs before each connect with a copy of
	// ConnConfig that only this connect uses: rotate a password or an IAM
	// token there. An error fails the connect (and is returned wrapped).
	BeforeConnect func(ctx context.Context, cc *pgx.ConnConfig) error
	// AfterConnect, if set, runs on each new connection before the pool
	// sees it, under Connect's context: session settings, prepared
	// statements, type registrations. An error closes the connection and
	// fails the connect.
	AfterConnect func(ctx context.Context, c *pgx.Conn) error
	// ShouldPing, if set, decides whether Recycle pings a connection, in
	// place of PingAfter. It runs on every reuse of a connection (not on its
	// first hand-out, which follows its connect) and on every background
	// health check of one. When it returns false the checks without a round
	// trip still run.
	ShouldPing func(ctx context.Context, p ShouldPingParams) bool
	// AfterRelease, if set, runs in CheckRelease on each connection released
	// in a reusable state, on the releasing goroutine: false closes the
	// connection instead of pooling it. As in pgxpool, it is not asked about
	// a connection released past its lifetime (pool.Config.MaxLifetime),
	// which the pool closes without asking the Manager.
	AfterRelease func(c *pgx.Conn) bool
	// BeforeClose, if set, runs in Close before each connection is closed.
	BeforeClose func(c *pgx.Conn)
	// PingAfter: Recycle pings (one round trip) a connection idle at least
	// this long before handing it out again. 0: one second, as in pgxpool;
	// negative: never (the checks without a round trip still run). Ignored
	// when ShouldPing is set.
	PingAfter time.Duration
	// PingTimeout bounds each ping Recycle sends. The ping does not run
	// under the acquirer's context: an acquirer that gives up returns at
	// once and the ping finishes without it (see Recycle). 0: 5 s.
	// Negative is invalid.
	PingTimeout time.Duration
	// CloseTimeout bounds the close of a connection (see Manager.Close): its
	// goodbye and the wait for the server to let go of it, after which the
	// socket is closed regardless and the pool's slot is free. 0: 250 ms.
	// Negative is invalid.
	CloseTimeout time.Duration
	// CleanupTimeout is how long Close waits for pgconn's clean-up of a
	// connection pgconn already closed on an error (a query cut short by its
	// context, a broken socket): a cancel request, on a connection of its
	// own, then reading what the server still sends on this one, up to 15 s.
	// 0 (the default): Close ends the stream at once and waits only for the
	// server to let go (within CloseTimeout, as for any close); the cancel
	// request goes on without it. Positive: Close first gives pgconn's
	// clean-up up to that long, which leaves no "connection reset" line in
	// the server's log. Negative is invalid.
	CleanupTimeout time.Duration
}

// Manager is a manager.Manager[*pgx.Conn] that also implements
// manager.ReleaseChecker: Connect opens a connection (with BeforeConnect and
// AfterConnect), Recycle checks it before each reuse, CheckRelease refuses
// one released in a state the next user must not inherit (and asks
// AfterRelease), and Close closes it within CloseTimeout (after
// BeforeClose). Its configuration is fixed once made; it is safe for
// concurrent use.
//
// A panic in a hook is recovered where the pool has no caller to give it to
// (BeforeConnect, AfterConnect, BeforeClose: they run on the pool's
// goroutines) and becomes an error of Connect or Close; ShouldPing and
// AfterRelease run on the caller's goroutine and their panics reach it.
type Manager struct {
	cfg Config // defaults filled in; never written after New

	forced atomic.Uint64 // closes that closed the socket themselves (see Close)

	// parked counts the entries of pings: pings left running, or finished,
	// by a Recycle whose context ended, not yet collected by the next
	// Recycle or Close of their connection. Recycle and Close look in pings
	// only when it is not zero.
	parked atomic.Int64
	mu     sync.Mutex
	pings  map[*pgx.Conn]*ping // guarded by mu
}

var (
	_ manager.Manager[*pgx.Conn]        = (*Manager)(nil)
	_ manager.ReleaseChecker[*pgx.Conn] = (*Manager)(nil)
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
}

// New returns a Manager for cfg. It returns an error matching
// ErrInvalidConfig, naming the field, if cfg is invalid.
func New(cfg Config) (*Manager, error) {
	if cfg.ConnConfig == nil {
		return nil, invalid("Config.ConnConfig is nil (use ParsePoolConfig or pgx.ParseConfig)")
	}
	return newManager(cfg)
}

// newManager is New for a Manager that may have no ConnConfig: a keyed
// one's connections each take their key's (see OpenKeyed).
func newManager(cfg Config) (*Manager, error) {
	switch {
	case cfg.PingTimeout < 0:
		return nil, invalid("Config.PingTimeout must be >= 0, got %v", cfg.PingTimeout)
	case cfg.CloseTimeout < 0:
		return nil, invalid("Config.CloseTimeout must be >= 0, got %v", cfg.CloseTimeout)
	case cfg.CleanupTimeout < 0:
		return nil, invalid("Config.CleanupTimeout must be >= 0, got %v", cfg.CleanupTimeout)
	}
	if name, ok := poolParam(cfg.ConnConfig); ok {
		return nil, invalid("Config.ConnConfig.RuntimeParams has %s, %s", name, poolParamAdvice)
	}
	if cfg.PingAfter == 0 {
		cfg.PingAfter = defaultPingAfter
	}
	if cfg.PingTimeout == 0 {
		cfg.PingTimeout = defaultPingTimeout
	}
	if cfg.CloseTimeout == 0 {
		cfg.CloseTimeout = defaultCloseTimeout
	}
	return &Manager{cfg: cfg, pings: make(map[*pgx.Conn]*ping)}, nil
}

// poolParamAdvice ends the error of a ConnConfig that holds a pgxpool
// parameter among its run-time parameters.
const poolParamAdvice = "a pgxpool parameter the server would refuse (parse the connection string with ParsePoolConfig)"

// poolParam returns the first of pgxpool's parameters (poolParams) that cc,
// if not nil, holds among its run-time parameters, which pgx.ParseConfig
// leaves there.
func poolParam(cc *pgx.ConnConfig) (string, bool) {
	if cc == nil {
		return "", false
	}
	for _, name := range poolParams {
		if _, ok := cc.RuntimeParams[name]; ok {
			return name, true
		}
	}
	return "", false
}

// forcedCloses returns how many Close calls closed a connection's socket
// before the server had let go of it: the server did not close its end
// within CloseTimeout (it stopped answering, or was still busy), or a ping
// left on the connection was cut short (see Close).
func (m *Manager) forcedCloses() uint64 { return m.forced.Load() }

// Connect opens a connection under ctx (which bounds the whole start-up:
// BeforeConnect, dial, TLS, authentication, AfterConnect). It returns pgx's
// error, or a hook's wrapped; after AfterConnect fails, the connection is
// closed first.
func (m *Manager) Connect(ctx context.Context) (*pgx.Conn, error) {
	return m.connect(ctx, m.cfg.ConnConfig)
}

// connect is Connect with the connection configuration cc, which it does
// not modify.
func (m *Manager) connect(ctx context.Context, cc *pgx.ConnConfig) (*pgx.Conn, error) {
	cc = cc.Copy()
	if m.cfg.BeforeConnect != nil {
		if err := guard("BeforeConnect", func() error { return m.cfg.BeforeConnect(ctx, cc) }); err != nil {
			return nil, err
		}
	}
	dial, connected := dialLingering(cc.DialFunc)
	cc.DialFunc = dial
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		// A backend that got as far as a slot is gone before the connect's
		// slot is free (see Close).
		linger(connected(), time.Now().Add(m.cfg.CloseTimeout))
		return nil, err
	}
	if dup := connected(); dup != nil {
		_ = dup.Close()
	}
	if m.cfg.AfterConnect != nil {
		if err := guard("AfterConnect", func() error { return m.cfg.AfterConnect(ctx, c) }); err != nil {
			_, _ = m.closeConn(c) // the pool never saw it: no BeforeClose
			return nil, err
		}
	}
	return c, nil
}

// guard runs the hook f, returning its error, or its panic as an error,
// wrapped with the hook's name.
func guard(hook string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("pgxmanager: %s panicked: %v", hook, r)
		}
	}()
	if err := f(); err != nil {
		return fmt.Errorf("pgxmanager: %s: %w", hook, err)
	}
	return nil
}

// doneCtx is a context that has ended: SyncConn under it returns at once,
// nil if the connection needs no round trip to be in step, else an error.
var doneCtx = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// Recycle reports whether c may be handed out again. Every error it returns
// but a ping cut short by ctx matches manager.ErrBroken, so that the pool
// closes the connection whatever ctx's state; a ping cut short matches
// ctx's error.
//
// First the checks of CheckRelease, with no I/O (a connection pgconn closed
// is refused here). Then, unless a ping is due (ShouldPing, if set, decides;
// else an idle time of PingAfter or more by met.LastUsed), a check with no
// round trip: a non-blocking peek at the socket, which finds a connection
// the server has closed or sent something unasked (pg_terminate_backend
// sends a FATAL error, then closes). When a ping is due: one round trip,
// bounded by PingTimeout.
//
// The ping runs detached from ctx, as pgxpool's does: if ctx ends first,
// Recycle returns at once with an error matching ctx's (and not ErrBroken),
// and the pool keeps the connection idle while the ping goes on, on a
// goroutine of its own, for at most PingTimeout. The next Recycle or Close
// of that connection collects the ping before anything else touches the
// connection: Recycle waits for it (under its own ctx) and goes on if the
// server answered, or refuses the connection if not; Close cuts it short
// if the server has not answered yet (see Close). So the connection is
// never used by two parties, and a server that answers late costs no
// connection.
//
// The peek is safe with pgconn's background reader. pgconn starts that
// reader when a write is slow (15 ms) and stops it only after its next read
// returns, so on an idle connection it may stay parked in a read that holds
// the socket's read lock: a plain peek would wait for it for ever. Recycle
// peeks only when pgconn.PgConn.SyncConn, asked under a context that has
// already ended, reports that no reader runs and nothing is buffered; when
// one runs, Recycle pings instead, and the ping's reply ends the parked read.
// Over TLS the socket cannot be peeked (see manager.Dialer.Recycle): only
// the ping checks the connection.
//
// A connection with unread data (the server's notifications of a LISTEN, a
// notice sent unasked) fails the peek and is closed rather than guessed at.
func (m *Manager) Recycle(ctx context.Context, c *pgx.Conn, met manager.Metrics) error {
	if m.parked.Load() != 0 {
		if p := m.unpark(c); p != nil {
			if err := m.await(ctx, c, p); err != nil {
				return err
			}
		}
	}
	if err := checkState(c); err != nil {
		return err
	}
	if !m.pingDue(ctx, c, met) {
		pc := c.PgConn()
		if pc.SyncConn(doneCtx) == nil {
			if err := (manager.Dialer{}).Recycle(ctx, pc.Conn(), met); err != nil {
				return fmt.Errorf("%w: %w: %w", errNotReusable, manager.ErrBroken, err)
			}
			return nil
		}
		// pgconn's background reader may hold the socket: ping.
	}
	return m.ping(ctx, c)
}

// pingDue reports whether Recycle pings c.
func (m *Manager) pingDue(ctx context.Context, c *pgx.Conn, met manager.Metrics) bool {
	if m.cfg.ShouldPing != nil {
		return m.cfg.ShouldPing(ctx, ShouldPingParams{Conn: c, IdleDuration: time.Since(met.LastUsed)})
	}
	return m.cfg.PingAfter >= 0 && time.Since(met.LastUsed) >= m.cfg.PingAfter
}

// ping is one ping of c, detached from ctx and bounded by PingTimeout.
type ping struct {
	done   chan struct{} // closed when err is set
	err    error
	cancel context.CancelFunc // ends the ping's context
}

// ping pings c under PingTimeout. If ctx can end, the ping runs on a
// goroutine of its own, so that Recycle can return when ctx ends and leave
// the ping parked for the next Recycle or Close of c.
func (m *Manager) ping(ctx context.Context, c *pgx.Conn) error {
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.PingTimeout)
	if ctx.Done() == nil { // ctx cannot end: nothing to detach from
		defer cancel()
		return pingErr(c.PgConn().Ping(pctx))
	}
	p := &ping{done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(p.done)
		p.err = c.PgConn().Ping(pctx)
		cancel()
	}()
	return m.await(ctx, c, p)
}

func pingErr(err error) error {
	if err != nil {
		return fmt.Errorf("%w: %w: ping: %w", errNotReusable, manager.ErrBroken, err)
	}
	return nil
}

// await waits under ctx for the ping p of c: its result, or, if ctx ends
// first, an error matching ctx's after parking p for the next Recycle or
// Close of c.
func (m *Manager) await(ctx context.Context, c *pgx.Conn, p *ping) error {
	select {
	case <-p.done:
		return pingErr(p.err)
	case <-ctx.Done():
		m.park(c, p)
		return fmt.Errorf("%w: the acquirer gave up during a ping, which goes on without it: %w", errNotReusable, ctx.Err())
	}
}

func (m *Manager) park(c *pgx.Conn, p *ping) {
	m.mu.Lock()
	m.pings[c] = p
	m.mu.Unlock()
	m.parked.Add(1)
}

// unpark removes and returns the ping parked on c, if any.
func (m *Manager) unpark(c *pgx.Conn) *ping {
	m.mu.Lock()
	p, ok := m.pings[c]
	if ok {
		delete(m.pings, c)
	}
	m.mu.Unlock()
	if ok {
		m.parked.Add(-1)
	}
	return p
}

// Errors of CheckRelease, built once.
var (
	errClosed       = fmt.Errorf("%w: %w: closed", errNotReusable, manager.ErrBroken)
	errBusy         = fmt.Errorf("%w: %w: busy (a result not read to its end)", errNotReusable, manager.ErrBroken)
	errAfterRelease = fmt.Errorf("%w: %w: AfterRelease returned false", errNotReusable, manager.ErrBroken)
)

// CheckRelease refuses a connection that is closed, busy (a query's result
// not read to its end, a batch not closed) or not idle outside a
// transaction (a transaction left open, or failed and not rolled back), or
// that AfterRelease refuses: the pool closes it instead of handing it to the
// next user. Its errors match manager.ErrBroken.
func (m *Manager) CheckRelease(c *pgx.Conn) error {
	if err := checkState(c); err != nil {
		return err
	}
	if m.cfg.AfterRelease != nil && !m.cfg.AfterRelease(c) {
		return errAfterRelease
	}
	return nil
}

// checkState is CheckRelease's checks of the connection's own state.
func checkState(c *pgx.Conn) error {
	pc := c.PgConn()
	switch {
	case pc.IsClosed():
		return errClosed
	case pc.IsBusy():
		return errBusy
	case pc.TxStatus() != 'I':
		return fmt.Errorf("%w: %w: transaction status %q (a transaction left open)", errNotReusable, manager.ErrBroken, pc.TxStatus())
	}
	return nil
}

// Close closes c, after BeforeClose: a Terminate message, then the end of
// the stream, and returns once the server has let go of the connection (it
// has closed its end: its backend has exited, and no longer counts against
// max_connections), or once CloseTimeout has passed, whichever is first.
// So the pool, which frees c's slot when Close returns, never has more
// connections on the server than MaxSize, and a server that cannot answer
// (frozen, partitioned) holds a slot for CloseTimeout at most. A close that
// did not see the server let go counts in Stat.ForcedCloseCount.
//
// A ping that a Recycle left on c (see Recycle) is collected first. If the
// server has answered it, c is closed as any other connection. If the ping
// still waits for the server, which has then left it unanswered since its
// acquirer gave up, Close cuts it short by closing the socket, then runs
// BeforeClose on the connection the cut closed; Stat.ForcedCloseCount counts the
// cut, which is not an error of Close's.
//
// A connection pgconn already closed on an error (a query cut short by its
// context, a broken socket) may still be cleaning up on a goroutine of
// pgconn's: a cancel request on a connection of its own, then reading what
// the server still sends on this one, for up to 15 s when the server does
// not answer. Close waits for that for CleanupTimeout (by default not at
// all), then ends the stream itself and waits for the server as above; the
// cancel request goes on without it.
func (m *Manager) Close(c *pgx.Conn) error {
	var (
		cut bool
		dup net.Conn // a descriptor of the socket the cut closed (see linger)
	)
	if m.parked.Load() != 0 {
		if p := m.unpark(c); p != nil {
			cut, dup = p.collect(c.PgConn())
		}
	}
	var hookErr error
	if m.cfg.BeforeClose != nil {
		hookErr = guard("BeforeClose", func() error { m.cfg.BeforeClose(c); return nil })
	}
	var err error
	letGo := true
	if cut {
		m.closeCut(c)
		letGo = linger(dup, time.Now().Add(m.cfg.CloseTimeout))
	} else {
		letGo, err = m.closeConn(c)
	}
	if cut || !letGo {
		m.forced.Add(1)
	}
	return errors.Join(hookErr, err)
}

// collect ends p, a ping parked on the connection pc, for Close, and
// reports whether it cut the ping short. An ended ping (answered, or
// failed, which closed pc) leaves pc as the ping left it. One still waiting
// for the server is cut: its context ends, and the socket is closed, which
// ends its read whatever pgconn's context handler does; collect returns a
// descriptor of the socket taken before (see linger), or nil.
func (p *ping) collect(pc *pgconn.PgConn) (cut bool, dup net.Conn) {
	select {
	case <-p.done:
		return false, nil
	default:
	}
	p.cancel()
	dup = dupSocket(pc.Conn())
	_ = pc.Conn().Close()
	<-p.done
	return true, dup
}

// closeCut is Close's end of a connection whose socket Close closed to cut
// its ping short: no goodbye can reach the server.
func (m *Manager) closeCut(c *pgx.Conn) {
	pc := c.PgConn()
	if pc.IsClosed() { // the usual case: the cut failed the ping, and pgconn closed pc
		m.awaitCleanup(pc) // under CleanupTimeout, for the cancel request of the ping
		return
	}
	// The answer came in just before the cut: pgconn still holds pc open.
	// Its Close marks it closed; the Terminate it writes fails on the
	// closed socket, as does its own close of the socket (the error is the
	// cut's, not the connection's).
	_ = c.Close(context.Background())
}

// closeConn is Close's goodbye and wait for the server to let go, both
// within CloseTimeout, or for a connection pgconn closed, its wait for
// pgconn's clean-up and then for the server. It reports whether the server
// let go in time.
func (m *Manager) closeConn(c *pgx.Conn) (letGo bool, err error) {
	pc := c.PgConn()
	if pc.IsClosed() {
		return m.awaitCleanup(pc), nil
	}
	deadline := time.Now().Add(m.cfg.CloseTimeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	letGo = closeLingering(pc.Conn(), deadline, func() { err = c.Close(ctx) })
	return letGo, err
}

// awaitCleanup waits up to CleanupTimeout for pgconn's clean-up of pc,
// which pgconn closed, which ends once the server has let go. If it has
// not ended, it closes the socket, which ends pgconn's drain of it (its
// cancel request goes on), and waits for the server to let go within
// CloseTimeout. It reports whether the server let go in time.
func (m *Manager) awaitCleanup(pc *pgconn.PgConn) (letGo bool) {
	select {
	case <-pc.CleanupDone():
		return true
	default:
	}
	if d := m.cfg.CleanupTimeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-pc.CleanupDone():
			return true
		case <-t.C:
		}
	}
	nc := pc.Conn()
	return closeLingering(nc, time.Now().Add(m.cfg.CloseTimeout), func() { _ = nc.Close() })
}
