package main

import (
	"bytes"
	"strings"
	"testing"
)

// The summary ends with one line per module whose tests skipped, naming
// the variable that runs them, else the skip's own message (not go test's
// "--- SKIP" line); a failed test's output is printed, a passed
// or skipped one's is not; of a package's own output, a passed package shows
// only go test's ok line and a failed one all of it.
func TestSummaryNamesEachModulesSkipsAndTheirVariable(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"run","Package":"github.com/poolkit/poolkit/contrib/pgxmanager","Test":"TestA"}`,
		`{"Action":"output","Package":"github.com/poolkit/poolkit/contrib/pgxmanager","Test":"TestA","Output":"    helpers_test.go:51: integration test: set POOLKIT_POSTGRES_DSN (e.g. x) to run it\n"}`,
		`{"Action":"skip","Package":"github.com/poolkit/poolkit/contrib/pgxmanager","Test":"TestA"}`,
		`{"Action":"skip","Package":"github.com/poolkit/poolkit/contrib/pgxmanager","Test":"TestB"}`,
		`{"Action":"output","Package":"github.com/poolkit/poolkit/pool","Test":"TestC","Output":"    restart_test.go:9: redis-server not found in PATH\n"}`,
		`{"Action":"output","Package":"github.com/poolkit/poolkit/pool","Test":"TestC","Output":"--- SKIP: TestC (0.00s)\n"}`,
		`{"Action":"skip","Package":"github.com/poolkit/poolkit/pool","Test":"TestC"}`,
		`{"Action":"output","Package":"github.com/poolkit/poolkit/pool","Test":"TestD","Output":"    x_test.go:3: it broke\n"}`,
		`{"Action":"fail","Package":"github.com/poolkit/poolkit/pool","Test":"TestD"}`,
		`{"Action":"output","Package":"github.com/poolkit/poolkit/pool","Test":"TestE","Output":"quiet\n"}`,
		`{"Action":"pass","Package":"github.com/poolkit/poolkit/pool","Test":"TestE"}`,
		`{"Action":"output","Package":"github.com/poolkit/poolkit/pool","Output":"goleak: found unexpected goroutines\n"}`,
		`{"Action":"output","Package":"github.com/poolkit/poolkit/pool","Output":"FAIL\tgithub.com/poolkit/poolkit/pool\t0.1s\n"}`,
		`{"Action":"output","Package":"github.com/poolkit/poolkit/bytepool","Output":"PASS\n"}`,
		`{"Action":"output","Package":"github.com/poolkit/poolkit/bytepool","Output":"ok  \tgithub.com/poolkit/poolkit/bytepool\t0.1s\n"}`,
		`{"Action":"build-output","ImportPath":"github.com/poolkit/poolkit/shard","Output":"shard/x.go:1: syntax error\n"}`,
	}, "\n")
	var out bytes.Buffer
	report(&out, render(strings.NewReader(stream), &out))
	got := out.String()
	want := "    x_test.go:3: it broke\n" +
		"goleak: found unexpected goroutines\n" +
		"FAIL\tgithub.com/poolkit/poolkit/pool\t0.1s\n" +
		"ok  \tgithub.com/poolkit/poolkit/bytepool\t0.1s\n" +
		"shard/x.go:1: syntax error\n" +
		"contrib/pgxmanager: 1 test skipped (TestA): set POOLKIT_POSTGRES_DSN to run them; 1 test skipped (TestB): no reason given\n" +
		"root module: 1 test skipped (TestC): redis-server not found in PATH\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
