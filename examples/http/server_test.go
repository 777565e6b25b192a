package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/poolkit/poolkit/bytepool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start serves newHandler on a real listener (httptest.NewServer) with a
// pool of its own.
func start(t *testing.T) (*httptest.Server, *bytepool.Pool) {
	t.Helper()
	bp, err := bytepool.New(bytepool.Config{})
	require.NoError(t, err)
	srv := httptest.NewServer(newHandler(bp))
	t.Cleanup(srv.Close)
	return srv, bp
}

func post(t *testing.T, srv *httptest.Server, path, body string) (int, string) {
	t.Helper()
	resp, err := srv.Client().Post(srv.URL+path, "text/plain", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestServerAnswersEachRoute(t *testing.T) {
	srv, _ := start(t)
	for _, tc := range []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"Upper", "/upper", "hello, world", 200, "HELLO, WORLD"},
		{"UpperUnicode", "/upper", "ñandú, ǆ", 200, "ÑANDÚ, Ǆ"},
		{"UpperEmpty", "/upper", "", 200, ""},
		{"UpperLarge", "/upper", strings.Repeat("ab", 300_000), 200, strings.Repeat("AB", 300_000)},
		{"Count", "/count", "one\ntwo three\n", 200, "lines=2 words=3 bytes=14\n"},
		{"CountEmpty", "/count", "", 200, "lines=0 words=0 bytes=0\n"},
		{"TooLarge", "/upper", strings.Repeat("x", maxBody+1), 413, "body larger than 1048576 bytes\n"},
		{"NotFound", "/nope", "x", 404, "404 page not found\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, got := post(t, srv, tc.path, tc.body)
			require.Equal(t, tc.code, code)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestServerRefusesOtherMethods(t *testing.T) {
	srv, _ := start(t)
	resp, err := srv.Client().Get(srv.URL + "/upper")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

// Concurrent requests with distinct bodies each get their own answer: no
// buffer is shared between two requests, and the pool's buffers are reused.
func TestServerConcurrentRequestsGetTheirOwnAnswers(t *testing.T) {
	srv, bp := start(t)
	const (
		workers  = 16
		requests = 40
	)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		wg.Go(func() {
			for j := range requests {
				body := strings.Repeat(fmt.Sprintf("w%d-r%d;", i, j), 1+(i*requests+j)%500)
				resp, err := srv.Client().Post(srv.URL+"/upper", "text/plain", strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				if string(got) != strings.ToUpper(body) {
					errs <- fmt.Errorf("worker %d request %d: got %d bytes, not the upper-cased body of %d", i, j, len(got), len(body))
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	s := bp.Stats()
	t.Logf("bytepool: gets=%d allocs=%d localHits=%d exchangeHits=%d", s.Gets, s.Allocs, s.LocalHits, s.ExchangeHits)
	require.Less(t, s.Allocs, s.Gets/2, "most buffers come from the pool")
}

func TestDemoRuns(t *testing.T) {
	var out strings.Builder
	require.NoError(t, demo(&out))
	require.Equal(t, `POST /upper: 200 HELLO, BYTEPOOL
POST /count: 200 lines=2 words=5 bytes=26
POST /upper: 200 AAAAAAAAAAAAAAAAAAAA… (100000 bytes)
`, out.String())
}
