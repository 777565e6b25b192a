//go:build linux

package manager

import (
	"syscall"
	"time"
)

// tcpUserTimeout is TCP_USER_TIMEOUT (linux/tcp.h), which package syscall
// does not name.
const tcpUserTimeout = 0x12

// userTimeout returns a net.Dialer.Control that sets TCP_USER_TIMEOUT to d
// (in milliseconds, at least 1) on TCP sockets.
func userTimeout(d time.Duration) func(network, address string, c syscall.RawConn) error {
	ms := int(max(d.Milliseconds(), 1))
	return func(network, _ string, c syscall.RawConn) error {
		switch network {
		case "tcp", "tcp4", "tcp6":
		default:
			return nil
		}
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpUserTimeout, ms)
		}); err != nil {
			return err
		}
		return serr
	}
}
