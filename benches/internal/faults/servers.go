package faults

import (
	"context"
)

// server is a private server the phase starts, faults and stops.
type server interface {
	// Name is "postgres" or "redis".
	Name() string
	// Describe says what it is: "PostgreSQL 15.19, private, on 127.0.0.1".
	Describe() string
	// Addr is its host:port on the loopback.
	Addr() string
	// KillClients ends every client connection but the caller's own.
	KillClients(ctx context.Context) (int, error)
	// Stop shuts the server down; Start starts it again on the same port
	// and returns once it answers.
	Stop(ctx context.Context) error
	Start(ctx context.Context) error
	// Pids are the processes of the server, for SIGSTOP and SIGCONT.
	Pids() ([]int, error)
	// Healthy returns nil once the server answers and no client of the
	// phase is connected.
	Healthy(ctx context.Context) error
	// Close stops the server and removes its files.
	Close() error
}
