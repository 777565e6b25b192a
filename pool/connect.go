package pool

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// Connect backoff for background connects (TryAcquire's and the
// maintainer's): after n consecutive failures, none starts for
// min(backoffBase<<(n-1), backoffMax).
const (
	backoffBase = 10 * time.Millisecond
	backoffMax  = 5 * time.Second
)

// connReq links an acquirer to the connect made on its behalf. state moves
// from 0 to reqDelivered (by the dialer, which then sends on ch) or to
// reqAbandoned (by the acquirer giving up, after which the dialer keeps the
// result for the pool): exactly one of the two wins.
type connReq[T any] struct {
	state atomic.Int32
	ch    chan connResult[T] // 1-buffered: the dialer's send never blocks
}

const (
	reqDelivered = 1
	reqAbandoned = 2
)

type connResult[T any] struct {
	e   *entry[T]
	err error
}

// startDial starts a connect in a slot the caller reserved. cause is the
// context of the call that asked for it (Background for the maintainer's):
// the connect carries its values. req is nil for a background connect (its
// object goes to a waiter or the idle set).
func (p *Pool[T]) startDial(cause context.Context, req *connReq[T]) {
	p.goStart()
	go p.dial(cause, req)
}

// startBackgroundDial is startDial for a connect of the maintainer's own
// (MinIdle), counted in bgDials until it ends (see topUpMinIdle).
func (p *Pool[T]) startBackgroundDial() {
	p.bgDials.Add(1)
	p.goStart()
	go func() {
		defer p.bgDials.Add(-1)
		p.dial(context.Background(), nil)
	}()
}

// dial runs one Manager.Connect on its own goroutine, cancelled by Close and
// bounded by ConnectTimeout, never by the acquirer's context: a connect
// outlives an acquirer that gave up (pgx #1259). A Connect that panics or
// calls runtime.Goexit fails with a *PanicError: the deferred dialed runs
// either way, so the slot is freed and the acquirer told.
func (p *Pool[T]) dial(cause context.Context, req *connReq[T]) {
	defer p.goExit()
	p.counters.connects.Add(1)
	epoch := p.epoch.Load()
	start := p.now()
	var v T
	var err error = &PanicError{Op: "Connect"} // replaced unless Connect calls runtime.Goexit
	defer func() { p.dialed(cause, req, epoch, start, v, err) }()
	v, err = p.connect(cause)
}

// dialed records the outcome of a connect that started at start (for the
// Observer) in the slot reserved for it, and delivers it: to the acquirer
// that asked (req), else to the next waiter or the idle set.
func (p *Pool[T]) dialed(cause context.Context, req *connReq[T], epoch uint32, start time.Duration, v T, err error) {
	if pe, ok := err.(*PanicError); ok && pe.Value == nil && pe.Stack == nil {
		pe.Stack = debug.Stack() // runtime.Goexit: the stack is still the one that called it
	}
	var e *entry[T]
	if err != nil {
		p.counters.connectErrs.Add(1)
		p.noteFailure()
		p.connectFailed() // the slot first: the next waiter may connect at once
	} else {
		p.failures.Store(0)
		p.rm.connected(p.now() - start)
		e = p.newEntry(v, epoch)
	}
	if p.cfg.Observer != nil {
		p.observeConnect(cause, start, e, err)
	}
	if req != nil && req.state.CompareAndSwap(0, reqDelivered) {
		req.ch <- connResult[T]{e, err}
		return
	}
	if e != nil {
		// Nobody asked, or the acquirer gave up: the object serves the next
		// waiter or goes idle, unless it is already stale (a Reset during
		// the connect, or a lifetime shorter than it).
		if r := p.expired(e); r != 0 {
			p.discard(e, r)
			return
		}
		p.giveBack(e)
	}
}

// callConnect is Manager.Connect with its panic recovered into a
// *PanicError.
func (p *Pool[T]) callConnect(ctx context.Context) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero T
			v, err = zero, recovered("Connect", r)
		}
	}()
	return p.mgr.Connect(ctx)
}

// connect runs Manager.Connect when the MaxConnecting semaphore lets it,
// under a context that carries cause's values (not its cancellation or
// deadline), is cancelled by Close and ends after ConnectTimeout. A connect cut short by Close returns an error matching ErrClosed and nothing
// else (the manager's error is kept in the message); one that ran past
// ConnectTimeout, an error matching ErrTimeout and
// context.DeadlineExceeded as well as the manager's error.
func (p *Pool[T]) connect(cause context.Context) (v T, err error) {
	if p.sem != nil {
		select {
		case p.sem <- struct{}{}:
			defer func() { <-p.sem }()
		case <-p.ctx.Done():
			return v, ErrClosed
		}
	}
	if p.ctx.Err() != nil { // both cases may be ready: Close wins
		return v, ErrClosed
	}
	ctx, cancel := p.connectContext(cause)
	defer cancel()
	v, err = p.callConnect(ctx)
	switch {
	case err == nil:
	case isPanic(err):
	case p.ctx.Err() != nil:
		err = fmt.Errorf("%w (connect cut short: %v)", ErrClosed, err)
	case ctx.Err() == context.DeadlineExceeded:
		err = &connectTimeoutError{d: p.cfg.ConnectTimeout, err: err}
	}
	return v, err
}

// connectTimeoutError is a connect that ran past Config.ConnectTimeout.
type connectTimeoutError struct {
	d   time.Duration
	err error // the manager's
}

func (e *connectTimeoutError) Error() string {
	return fmt.Sprintf("timed out after ConnectTimeout %v: %v", e.d, e.err)
}

func (e *connectTimeoutError) Unwrap() []error {
	return []error{ErrTimeout, context.DeadlineExceeded, e.err}
}

// connectFor connects in a slot the caller reserved and waits for the result
// under ctx (which AcquireTimeout bounds: see blockTimed). If the caller
// gives up first, the connect goes on and its object serves the next waiter
// or goes idle; if it gives up as the result arrives (or its context has
// ended by then), the object is handed on all the same and the caller gets
// its error. A fresh object that fails its checks (it expired during the
// connect: a Reset, or a short lifetime) is returned as bad, with the reason
// to close it, for the caller to retry with.
func (p *Pool[T]) connectFor(ctx context.Context) (l Lease[T], bad *entry[T], reason int, err error) {
	req := &connReq[T]{ch: make(chan connResult[T], 1)}
	p.startDial(ctx, req)
	var r connResult[T]
	select {
	case r = <-req.ch:
	case <-ctx.Done():
		err = ctxError(ctx)
	}
	if err != nil {
		if req.state.CompareAndSwap(0, reqAbandoned) {
			p.countErr(err)
			return l, nil, 0, err
		}
		r = <-req.ch // delivered at that very instant: pass it on
	} else if ctx.Err() != nil {
		err = ctxError(ctx)
	}
	if err != nil {
		if r.e != nil {
			p.giveBack(r.e)
		}
		p.countErr(err)
		return l, nil, 0, err
	}
	if r.err != nil {
		if errors.Is(r.err, ErrTimeout) {
			p.counters.timeouts.Add(1)
		}
		return l, nil, 0, fmt.Errorf("pool: connect: %w", r.err)
	}
	e := r.e
	if reason := p.check(ctx, e); reason != 0 {
		return l, e, reason, nil
	}
	p.counters.acqOther.Add(1)
	return Lease[T]{e, e.state.Load()}, nil, 0, nil
}

// Retries of an Acquire's failed connect (connRetry): pauses doubling from
// retryBase to retryMax.
const (
	retryBase = 10 * time.Millisecond
	retryMax  = 200 * time.Millisecond
)

// retriable reports whether an Acquire whose connect failed with err (as
// connectFor returns it) tries again: only with AcquireTimeout set — the
// caller has said how long it will wait for an object, and ctx, bounded by
// it, has a deadline — while ctx lasts, and not after Close or a panic (see
// decision 0010).
func (p *Pool[T]) retriable(ctx context.Context, err error) bool {
	var pe *PanicError
	return p.cfg.AcquireTimeout > 0 && ctx.Err() == nil && !errors.Is(err, ErrClosed) && !errors.As(err, &pe)
}

// connRetry is the state of an Acquire that retries its failed connects:
// the last connect error and the pause before the next one. Zero: none
// failed.
type connRetry struct {
	last  error
	n     int  // connects failed
	due   bool // a pause is due before the next connect
	timer *time.Timer
}

// failed records a failed connect.
func (r *connRetry) failed(err error) {
	r.last = err
	r.n++
	r.due = true
}

// pause starts the pause due after a failure and returns its channel, or
// nil when no connect has failed since the last pause.
func (r *connRetry) pause() <-chan time.Time {
	if !r.due {
		return nil
	}
	r.due = false
	d := retryMax
	if r.n <= 5 {
		d = min(retryBase<<(r.n-1), retryMax)
	}
	r.timer = time.NewTimer(d)
	return r.timer.C
}

// stop ends the pause, if any.
func (r *connRetry) stop() {
	if r.timer != nil {
		r.timer.Stop()
		r.timer = nil
	}
}

// err is what an Acquire that ends with err returns: err itself if no
// connect failed, else the last connect error, which err (the end of ctx)
// is then added to.
func (r *connRetry) err(err error) error {
	if r.last == nil {
		return err
	}
	return &retryError{last: r.last, end: err}
}

// retryError ends an Acquire whose connects failed until its context ended:
// it matches the last connect error and the end of the context (ErrTimeout
// and context.DeadlineExceeded at the deadline).
type retryError struct {
	last, end error
}

func (e *retryError) Error() string {
	return e.last.Error() + " (retried until the acquire ended: " + e.end.Error() + ")"
}

func (e *retryError) Unwrap() []error { return []error{e.last, e.end} }

// noteFailure records a failed connect and pushes back background connects.
func (p *Pool[T]) noteFailure() {
	n := p.failures.Add(1)
	d := backoffMax
	if n <= 20 {
		d = min(backoffBase<<(n-1), backoffMax)
	}
	p.retryAt.Store(int64(p.now() + d))
}

// backingOff reports whether background connects must wait after failures.
func (p *Pool[T]) backingOff() bool {
	return p.failures.Load() > 0 && int64(p.now()) < p.retryAt.Load()
}

// connectContext returns the context of one Manager.Connect (see connect).
func (p *Pool[T]) connectContext(cause context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(cause), p.cfg.ConnectTimeout)
	stop := context.AfterFunc(p.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}
