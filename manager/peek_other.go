//go:build !unix || aix

package manager

import "net"

// peek implements Dialer.Recycle where package syscall offers no
// non-blocking peek (Windows, js, wasip1, Plan 9; AIX, whose syscall package
// lacks MSG_DONTWAIT): every connection passes as reusable, and a dead one
// shows on first use.
func peek(net.Conn) error { return nil }
