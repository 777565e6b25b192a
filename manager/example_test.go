package manager_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/poolkit/poolkit/manager"
)

// A Manager from functions: sessions are worn out after two reuses. The loop
// below does by hand what a pool does between leases.
func ExampleFuncs() {
	type session struct{ id int }
	var next int
	var m manager.Manager[*session] = manager.Funcs[*session]{
		ConnectFunc: func(ctx context.Context) (*session, error) {
			next++
			fmt.Println("connect", next)
			return &session{id: next}, nil
		},
		RecycleFunc: func(ctx context.Context, s *session, m manager.Metrics) error {
			if m.Uses >= 3 {
				return errors.New("worn out")
			}
			return nil
		},
		CloseFunc: func(s *session) error {
			fmt.Println("close", s.id)
			return nil
		},
	}

	ctx := context.Background()
	s, err := m.Connect(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for uses := uint64(1); ; uses++ {
		if err := m.Recycle(ctx, s, manager.Metrics{Uses: uses}); err != nil {
			fmt.Println("recycle:", err)
			m.Close(s)
			break
		}
		fmt.Println("reuse", s.id)
	}

	// A Funcs without ConnectFunc says so.
	_, err = manager.Funcs[*session]{}.Connect(ctx)
	fmt.Println(err)
	// Output:
	// connect 1
	// reuse 1
	// reuse 1
	// recycle: worn out
	// close 1
	// manager: Funcs.ConnectFunc is nil
}
