//go:build !linux

package manager

import (
	"syscall"
	"time"
)

// userTimeout is nil off Linux: TCP_USER_TIMEOUT is a Linux option, and
// Dialer.UserTimeout is documented as ignored elsewhere.
func userTimeout(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
