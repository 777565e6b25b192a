package manager

import (
	"context"
	"errors"
)

// Keyed is the [Manager] contract for a keyed pool: objects are made for a
// key (a tenant's database, a cluster node, an upstream host) and belong to
// it for life. Recycle and Close are Manager's: the pool never asks them
// for an object of another key than the one it was made for, and it holds
// an object's key itself, so they are not told it.
//
// A Keyed manager may implement [ReleaseChecker] and SkipRecycle, with
// the meaning they have for a Manager.
type Keyed[K comparable, T any] interface {
	// Connect makes a new object for key; see Manager.Connect.
	Connect(ctx context.Context, key K) (T, error)
	// Recycle checks a used object before it is handed out again; see
	// Manager.Recycle.
	Recycle(ctx context.Context, obj T, m Metrics) error
	// Close destroys an object; see Manager.Close.
	Close(obj T) error
}

// errNoKeyedConnectFunc is what KeyedFuncs.Connect returns when ConnectFunc
// is nil.
var errNoKeyedConnectFunc = errors.New("manager: KeyedFuncs.ConnectFunc is nil")

// KeyedFuncs is a [Keyed] manager built from functions, as [Funcs] is a
// Manager:
//
//	m := manager.KeyedFuncs[string, net.Conn]{
//		ConnectFunc: func(ctx context.Context, addr string) (net.Conn, error) {
//			return d.DialContext(ctx, "tcp", addr)
//		},
//		CloseFunc: net.Conn.Close,
//	}
//
// The nil functions mean what they mean for Funcs.
type KeyedFuncs[K comparable, T any] struct {
	// ConnectFunc makes a new object for a key; see Keyed.Connect. Required.
	ConnectFunc func(ctx context.Context, key K) (T, error)
	// RecycleFunc checks a used object before it is handed out again. Nil
	// means always reusable.
	RecycleFunc func(ctx context.Context, obj T, m Metrics) error
	// CloseFunc destroys an object. Nil means there is nothing to do.
	CloseFunc func(obj T) error
}

var _ Keyed[string, int] = KeyedFuncs[string, int]{}

// Connect calls f.ConnectFunc. If it is nil, Connect returns the zero T and
// an error naming the field.
func (f KeyedFuncs[K, T]) Connect(ctx context.Context, key K) (T, error) {
	if f.ConnectFunc == nil {
		var zero T
		return zero, errNoKeyedConnectFunc
	}
	return f.ConnectFunc(ctx, key)
}

// Recycle calls f.RecycleFunc, or returns nil if it is nil. (It calls the
// function itself, not through Funcs: a pool calls it on every reuse, and a
// second call would copy the Metrics once more.)
func (f KeyedFuncs[K, T]) Recycle(ctx context.Context, obj T, m Metrics) error {
	if f.RecycleFunc == nil {
		return nil
	}
	return f.RecycleFunc(ctx, obj, m)
}

// Close calls f.CloseFunc, or returns nil if it is nil.
func (f KeyedFuncs[K, T]) Close(obj T) error {
	return Funcs[T]{CloseFunc: f.CloseFunc}.Close(obj)
}
