//go:build !poolkit_nolinkname

package pin

import (
	"runtime"
	"testing"
)

func TestPinReturnsAPInRange(t *testing.T) {
	for range 1000 {
		pid := Pin()
		Unpin()
		if pid < 0 || pid >= runtime.GOMAXPROCS(0) {
			t.Fatalf("Pin returned %d with GOMAXPROCS %d", pid, runtime.GOMAXPROCS(0))
		}
	}
}
