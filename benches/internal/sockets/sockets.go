// Package sockets counts TCP sockets by state and port from the kernel's
// tables (/proc/net/tcp and /proc/net/tcp6 on Linux), for the end-to-end
// benchmarks: how many sockets a phase leaves in TIME_WAIT.
package sockets

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// TCP states as the kernel numbers them (include/net/tcp_states.h); the
// tables print them in hex in the st column.
const (
	Established = 0x01
	SynSent     = 0x02
	SynRecv     = 0x03
	FinWait1    = 0x04
	FinWait2    = 0x05
	TimeWait    = 0x06
	Close       = 0x07
	CloseWait   = 0x08
	LastAck     = 0x09
	Listen      = 0x0A
	Closing     = 0x0B
)

// Tables are the files Count reads; a missing one (tcp6 with IPv6 off) is
// skipped, but at least one must be readable.
var Tables = []string{"/proc/net/tcp", "/proc/net/tcp6"}

// ErrUnavailable is returned where no table can be read (not Linux).
var ErrUnavailable = errors.New("sockets: no readable /proc/net/tcp table")

// Census is what Count finds for one port.
type Census struct {
	TimeWait int // sockets in TIME_WAIT
	// Closing counts sockets half-way through a close (FIN_WAIT1,
	// FIN_WAIT2, CLOSING, LAST_ACK, CLOSE_WAIT): they may yet reach
	// TIME_WAIT.
	Closing int
}

// Count returns the census of the TCP sockets, IPv4 and IPv6, whose local or
// remote port is port: both ends of a connection to a server on this
// machine, whichever end closed first.
func Count(port int) (Census, error) {
	var total Census
	read := 0
	for _, path := range Tables {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		c, err := Parse(f, port)
		f.Close()
		if err != nil {
			return total, fmt.Errorf("%s: %w", path, err)
		}
		read++
		total.TimeWait += c.TimeWait
		total.Closing += c.Closing
	}
	if read == 0 {
		return total, ErrUnavailable
	}
	return total, nil
}

// Available reports whether Count can read the tables here.
func Available() bool {
	_, err := Count(0)
	return err == nil
}

// Settle polls the census of port every millisecond until no socket is
// half-way through a close, or for at most d, and returns the last census.
// Call it after closing connections: a socket closed first passes FIN_WAIT
// before TIME_WAIT, once the other end has closed too.
func Settle(port int, d time.Duration) (Census, error) {
	deadline := time.Now().Add(d)
	for {
		c, err := Count(port)
		if err != nil || c.Closing == 0 || time.Now().After(deadline) {
			return c, err
		}
		time.Sleep(time.Millisecond)
	}
}

// Sysctl returns the value of a kernel setting such as
// "net.ipv4.ip_local_port_range" from /proc/sys, with its fields separated
// by single spaces, or "" where it cannot be read.
func Sysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		return ""
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// Parse reads one table in the format of /proc/net/tcp (a header line, then
// "sl local_address rem_address st ..." with addresses as HEXIP:HEXPORT and
// the state in hex) and returns the census of port.
func Parse(r io.Reader, port int) (Census, error) {
	var c Census
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			first = false
			if strings.Contains(line, "local_address") {
				continue
			}
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 {
			return c, fmt.Errorf("sockets: short line %q", line)
		}
		local, err := portOf(f[1])
		if err != nil {
			return c, err
		}
		remote, err := portOf(f[2])
		if err != nil {
			return c, err
		}
		if local != port && remote != port {
			continue
		}
		st, err := strconv.ParseUint(f[3], 16, 8)
		if err != nil {
			return c, fmt.Errorf("sockets: bad state %q", f[3])
		}
		switch st {
		case TimeWait:
			c.TimeWait++
		case FinWait1, FinWait2, Closing, LastAck, CloseWait:
			c.Closing++
		}
	}
	return c, sc.Err()
}

// portOf returns the port of an address "0100007F:1F90".
func portOf(addr string) (int, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return 0, fmt.Errorf("sockets: bad address %q", addr)
	}
	p, err := strconv.ParseUint(addr[i+1:], 16, 16)
	if err != nil {
		return 0, fmt.Errorf("sockets: bad port in %q", addr)
	}
	return int(p), nil
}
