package echo_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/examples/tcp/echo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T) *echo.Server {
	t.Helper()
	s, err := echo.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func dial(t *testing.T, s *echo.Server) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial(s.Network(), s.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	return c, bufio.NewReader(c)
}

func TestServerEchoesLines(t *testing.T) {
	s := start(t)
	c, r := dial(t, s)
	long := strings.Repeat("x", 20_000) // longer than the server's read buffer
	_, err := io.WriteString(c, "one\ntwo\n"+long+"\n")
	require.NoError(t, err)
	for _, want := range []string{"one\n", "two\n", long + "\n"} {
		got, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	require.EqualValues(t, 1, s.Accepted())
	require.Equal(t, 1, s.Open())
}

func TestServerKillAllDropsEveryConnection(t *testing.T) {
	s := start(t)
	_, r1 := dial(t, s)
	_, r2 := dial(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Both are registered once the server has accepted them.
	for s.Open() < 2 {
		require.NoError(t, ctx.Err())
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, 2, s.KillAll())
	for _, r := range []*bufio.Reader{r1, r2} {
		_, err := r.ReadByte()
		require.ErrorIs(t, err, io.EOF)
	}
	require.NoError(t, s.WaitOpen(ctx, 0))

	c, r := dial(t, s) // still accepting
	_, err := io.WriteString(c, "again\n")
	require.NoError(t, err)
	got, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "again\n", got)
}

func TestServerCloseStopsEverything(t *testing.T) {
	s := start(t)
	_, r := dial(t, s)
	require.NoError(t, s.Close())
	_, err := r.ReadByte()
	require.ErrorIs(t, err, io.EOF)
	require.Zero(t, s.Open())
	_, err = net.DialTimeout("tcp", s.Addr(), time.Second)
	require.Error(t, err)
	require.NoError(t, s.Close(), "Close is idempotent")
}
