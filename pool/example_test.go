package pool_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/poolkit/poolkit/manager"
	"github.com/poolkit/poolkit/pool"
)

// session is a costly object: say, a logged-in connection.
type session struct {
	id     int
	broken bool
}

// sessions is a custom Manager[*session].
type sessions struct {
	made, closed atomic.Int32
}

func (m *sessions) Connect(ctx context.Context) (*session, error) {
	return &session{id: int(m.made.Add(1))}, nil
}

func (m *sessions) Recycle(ctx context.Context, s *session, _ manager.Metrics) error {
	if s.broken {
		return errors.New("session broken")
	}
	return nil
}

func (m *sessions) Close(s *session) error {
	m.closed.Add(1)
	return nil
}

func Example() {
	m := &sessions{}
	p, err := pool.New[*session](m, pool.Config{MaxSize: 2})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()

	l, _ := p.Acquire(ctx)
	fmt.Println("got session", l.Value().id)
	l.Release() // back to the pool: the next Acquire reuses it

	l, _ = p.Acquire(ctx)
	fmt.Println("got session", l.Value().id, "again")
	l.Value().broken = true
	l.Release() // Recycle will refuse it at the next Acquire

	l, _ = p.Acquire(ctx)
	fmt.Println("got session", l.Value().id)
	l.Release()

	_ = p.Close(ctx) // waits for every Manager.Close
	fmt.Println("made", m.made.Load(), "closed", m.closed.Load())
	// Output:
	// got session 1
	// got session 1 again
	// got session 2
	// made 2 closed 2
}

// A pool whose manager is built from functions.
func Example_funcs() {
	var closed atomic.Int32
	m := manager.Funcs[[]byte]{
		ConnectFunc: func(ctx context.Context) ([]byte, error) { return make([]byte, 0, 64), nil },
		CloseFunc:   func([]byte) error { closed.Add(1); return nil },
	}
	p, err := pool.New[[]byte](m, pool.Config{MaxSize: 1})
	if err != nil {
		panic(err)
	}
	l, _ := p.Acquire(context.Background())
	_, err = p.TryAcquire(context.Background())
	fmt.Println(err)
	fmt.Println(cap(l.Value()))
	l.Destroy()
	_ = p.Close(context.Background())
	fmt.Println("closed", closed.Load())
	// Output:
	// pool: exhausted
	// 64
	// closed 1
}
