package manager

import (
	"context"
	"errors"
)

// errNoConnectFunc is what Funcs.Connect returns when ConnectFunc is nil.
var errNoConnectFunc = errors.New("manager: Funcs.ConnectFunc is nil")

// Funcs is a [Manager] built from functions, for objects that need no type of
// their own:
//
//	m := manager.Funcs[*Client]{
//		ConnectFunc: func(ctx context.Context) (*Client, error) { return Dial(ctx, addr) },
//		CloseFunc:   (*Client).Close,
//	}
//
// A nil RecycleFunc treats every object as reusable (and a pool then does
// not call Recycle at all); a nil CloseFunc makes
// Close do nothing. A nil ConnectFunc makes Connect fail with an error naming
// the field, so a Funcs without one is a Manager that never produces an
// object.
//
// Funcs is a plain value and is safe for concurrent use if its functions are:
// a pool calls them from several goroutines at once, but never for the same
// object concurrently (see Manager). Do not change the fields once a pool
// holds the Funcs.
type Funcs[T any] struct {
	// ConnectFunc makes a new object; see Manager.Connect. Required.
	ConnectFunc func(ctx context.Context) (T, error)
	// RecycleFunc checks a used object before it is handed out again; see
	// Manager.Recycle. Nil means always reusable.
	RecycleFunc func(ctx context.Context, obj T, m Metrics) error
	// CloseFunc destroys an object; see Manager.Close. Nil means there is
	// nothing to do.
	CloseFunc func(obj T) error
}

var _ Manager[int] = Funcs[int]{}

// Connect calls f.ConnectFunc. If it is nil, Connect returns the zero T and
// an error naming the field.
func (f Funcs[T]) Connect(ctx context.Context) (T, error) {
	if f.ConnectFunc == nil {
		var zero T
		return zero, errNoConnectFunc
	}
	return f.ConnectFunc(ctx)
}

// Recycle calls f.RecycleFunc, or returns nil if it is nil.
func (f Funcs[T]) Recycle(ctx context.Context, obj T, m Metrics) error {
	if f.RecycleFunc == nil {
		return nil
	}
	return f.RecycleFunc(ctx, obj, m)
}

// Close calls f.CloseFunc, or returns nil if it is nil.
func (f Funcs[T]) Close(obj T) error {
	if f.CloseFunc == nil {
		return nil
	}
	return f.CloseFunc(obj)
}
