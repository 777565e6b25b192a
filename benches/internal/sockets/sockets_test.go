package sockets

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parseFile(t *testing.T, name string, port int) Census {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	c, err := Parse(f, port)
	require.NoError(t, err)
	return c
}

// The fixture has, for port 6379 (0x18EB): a listener, three TIME_WAIT
// sockets (two client ends, one server end), one ESTABLISHED, one FIN_WAIT2
// and one CLOSE_WAIT; and two TIME_WAIT sockets of port 5432 (0x1538).
func TestParseCountsTimeWaitOfEitherEndOfThePort(t *testing.T) {
	assert.Equal(t, Census{TimeWait: 3, Closing: 2}, parseFile(t, "tcp", 6379))
	assert.Equal(t, Census{TimeWait: 2}, parseFile(t, "tcp", 5432))
	assert.Equal(t, Census{}, parseFile(t, "tcp", 80))
}

func TestParseReadsIPv6Tables(t *testing.T) {
	assert.Equal(t, Census{TimeWait: 1}, parseFile(t, "tcp6", 6379))
	assert.Equal(t, Census{TimeWait: 1}, parseFile(t, "tcp6", 5432))
}

func TestCountSumsTheTables(t *testing.T) {
	saved := Tables
	t.Cleanup(func() { Tables = saved })
	Tables = []string{"testdata/tcp", "testdata/tcp6", "testdata/missing"}
	c, err := Count(6379)
	require.NoError(t, err)
	assert.Equal(t, Census{TimeWait: 4, Closing: 2}, c)

	Tables = []string{"testdata/missing"}
	_, err = Count(6379)
	assert.ErrorIs(t, err, ErrUnavailable)
	assert.False(t, Available())
}

func TestParseRejectsGarbage(t *testing.T) {
	for _, in := range []string{
		"hdr local_address\n 0: 0100007F\n",
		"hdr local_address\n 0: 0100007F:XYZ 00000000:0000 0A\n",
		"hdr local_address\n 0: 0100007F:18EB 00000000:0000 QQ\n",
	} {
		_, err := Parse(strings.NewReader(in), 6379)
		assert.Error(t, err, in)
	}
}

// TestCountSeesARealTimeWait closes a loopback connection from the client
// side and finds its TIME_WAIT socket, where the kernel has the tables.
func TestCountSeesARealTimeWait(t *testing.T) {
	if !Available() {
		t.Skip("no /proc/net/tcp here")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	before, err := Count(port)
	require.NoError(t, err)
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, err)
	s := <-accepted
	require.NotNil(t, s)
	require.NoError(t, c.Close()) // the client closes first: its end waits
	require.NoError(t, s.Close())
	after, err := Settle(port, time.Second)
	require.NoError(t, err)
	// At least ours: an earlier connection that used this port number (as
	// an ephemeral port: a benchmark leaves thousands) may add its own.
	assert.GreaterOrEqual(t, after.TimeWait, before.TimeWait+1)
	assert.Zero(t, after.Closing)
}

func TestSysctl(t *testing.T) {
	assert.Empty(t, Sysctl("no.such.setting"))
	if !Available() {
		t.Skip("no /proc here")
	}
	r := strings.Fields(Sysctl("net.ipv4.ip_local_port_range"))
	require.Len(t, r, 2, "two ports, single-spaced")
	for _, p := range r {
		_, err := strconv.Atoi(p)
		assert.NoError(t, err)
	}
}
