package pool

import (
	"context"
	"errors"
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

// errAcquireTimeout is the error of a wait ended by Config.AcquireTimeout.
var errAcquireTimeout = &waitError{timeout: true, err: context.DeadlineExceeded,
	cause: errors.New("Config.AcquireTimeout elapsed")}

// ctxError builds the error for a wait ended by ctx.
func ctxError(ctx context.Context) *waitError {
	err := ctx.Err()
	cause := context.Cause(ctx)
	if cause == err {
		cause = nil
	}
	return &waitError{timeout: errors.Is(err, context.DeadlineExceeded), err: err, cause: cause}
}
