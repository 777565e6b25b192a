package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func Example() {
	if err := run(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// echo: hello
	// echo: again
	// connections dialled: 1
	// 8 workers × 25 requests: all echoed
	// connections dialled: at most 4: true
	// echo: after the server dropped us
	// after Close: 0 live, 0 open on the server
}
