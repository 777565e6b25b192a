package pool

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

var (
	// ErrClosed is returned by Acquire and TryAcquire once Close has begun,
	// and to waiters woken by Close.
	ErrClosed = errors.New("pool: closed")
	// ErrExhausted is returned by TryAcquire when no idle object is available.
	ErrExhausted = errors.New("pool: exhausted")
	// ErrTimeout is matched ([errors.Is]) by every error that ends an Acquire
	// because a deadline passed: the context's deadline or
	// [Config.AcquireTimeout]. Such errors match [context.DeadlineExceeded] too.
	ErrTimeout = errors.New("pool: acquire timed out")
	// ErrInvalidConfig is matched by every error New returns for a bad [Config].
	ErrInvalidConfig = errors.New("pool: invalid config")
)

// waitError ends an Acquire whose wait or connect was cut short by its
// context or by Config.AcquireTimeout. It matches ErrTimeout (deadlines
// only), the context's error, and the context's cause.
type waitError struct {
	timeout bool  // a deadline passed: matches ErrTimeout
	err     error // context.DeadlineExceeded or context.Canceled
	cause   error // context.Cause, if different from err; may be nil
}

func (e *waitError) Error() string {
	c := e.err
	if e.cause != nil {
		c = e.cause
	}
	if e.timeout {
		return "pool: acquire timed out: " + c.Error()
	}
	return "pool: acquire canceled: " + c.Error()
}

func (e *waitError) Unwrap() []error {
	errs := make([]error, 0, 3)
	if e.timeout {
		errs = append(errs, ErrTimeout)
	}
	errs = append(errs, e.err)
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// errAcquireTimeoutCause is the cause of the deadline that
// Config.AcquireTimeout puts on a blocked Acquire's context (blockTimed).
var errAcquireTimeoutCause = errors.New("Config.AcquireTimeout elapsed")

// ctxError builds the error for a wait ended by ctx.
func ctxError(ctx context.Context) *waitError {
	err := ctx.Err()
	cause := context.Cause(ctx)
	if cause == err {
		cause = nil
	}
	return &waitError{timeout: errors.Is(err, context.DeadlineExceeded), err: err, cause: cause}
}

// PanicError is the error of a Manager call that panicked (or called
// runtime.Goexit) on one of the pool's own goroutines: a connect (an
// Acquire's, a Warm's, or a background one), or a close. The pool recovers
// such a panic, so that user code cannot kill the process from a goroutine
// the pool started: the connect's slot is freed and the panic counted as a
// connect error (Stats.ConnectErrors), or the close counted as done and
// failed (Stats.CloseErrors). The error reaches the Observer (ConnectEvent.Err,
// CloseEvent.Err) and, for a connect, the Acquire or Warm that waited for it,
// wrapped; errors.As finds it. It unwraps to the panic value if that is an
// error.
type PanicError struct {
	Op    string // the Manager method: "Connect" or "Close" ("Recycle" in an AcquireEvent: see Observer)
	Value any    // the value passed to panic; nil for runtime.Goexit
	Stack []byte // the stack of the goroutine that panicked, as runtime/debug.Stack formats it
}

func (e *PanicError) Error() string {
	what := fmt.Sprintf("panicked: %v", e.Value)
	if e.Value == nil {
		what = "called runtime.Goexit"
	}
	return fmt.Sprintf("pool: Manager.%s %s\n\n%s", e.Op, what, e.Stack)
}

// Unwrap returns the panic value if it is an error, else nil.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recovered returns the PanicError of op for r, a value recover returned in
// a deferred call (nil: the goroutine is exiting by runtime.Goexit).
func recovered(op string, r any) *PanicError {
	return &PanicError{Op: op, Value: r, Stack: debug.Stack()}
}

// dropPanic, deferred around an Observer call on one of the pool's own
// goroutines, recovers and drops its panic (see Observer).
func dropPanic() { _ = recover() }

// isPanic reports whether err is a *PanicError (unwrapped).
func isPanic(err error) bool {
	_, ok := err.(*PanicError)
	return ok
}
