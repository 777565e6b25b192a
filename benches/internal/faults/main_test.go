package faults

import (
	"testing"

	"go.uber.org/goleak"
)

// go-redis keeps a clock goroutine for the life of the process once its
// package is loaded.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/redis/go-redis/v9/internal/pool.startGlobalTimeCache.func1"))
}
