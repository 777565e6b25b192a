// Package itest holds what the examples' integration tests share: where the
// servers are (from the environment), how long fault tests run, unique
// connection names, and polling up to a deadline instead of sleeping.
package itest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Environment variables read by the integration tests. CI sets the first two.
const (
	// EnvRedisAddr is the Redis server's host:port, e.g. 127.0.0.1:6379.
	EnvRedisAddr = "POOLKIT_REDIS_ADDR"
	// EnvPostgresDSN is a PostgreSQL connection string, e.g.
	// postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
	EnvPostgresDSN = "POOLKIT_POSTGRES_DSN"
	// EnvFaultDuration is how long the fault tests run their workload (a
	// time.ParseDuration string); DefaultFaultDuration if unset.
	EnvFaultDuration = "POOLKIT_FAULT_DURATION"
)

// DefaultFaultDuration is the fault tests' workload time when
// EnvFaultDuration is unset.
const DefaultFaultDuration = 2 * time.Second

// examples are example values of the server variables, for the messages
// that say how to set them.
var examples = map[string]string{
	EnvRedisAddr:   "127.0.0.1:6379",
	EnvPostgresDSN: "'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'",
}

// RedisAddr returns $POOLKIT_REDIS_ADDR, or skips the test saying to set it.
func RedisAddr(t testing.TB) string {
	t.Helper()
	return fromEnv(t, EnvRedisAddr)
}

// PostgresDSN returns $POOLKIT_POSTGRES_DSN, or skips the test saying to set
// it.
func PostgresDSN(t testing.TB) string {
	t.Helper()
	return fromEnv(t, EnvPostgresDSN)
}

func fromEnv(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("integration test: %s to run it against a real server", howToSet(name))
	}
	return v
}

func howToSet(name string) string {
	return fmt.Sprintf("set %s (e.g. %s=%s)", name, name, examples[name])
}

// Main is TestMain for a package whose integration tests need the servers
// that vars name: for each variable that is unset it prints one line to
// standard error saying that those tests skip and how to enable them (a
// t.Skip message shows only with -v), then runs the tests under goleak.
//
// go test shows the line when it runs the package alone (go test, in its
// directory) or with -v; in package-list mode (go test ./...) it discards
// all output of a package that passes, this line included.
func Main(m *testing.M, vars ...string) {
	pkg := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	for _, name := range vars {
		if os.Getenv(name) == "" {
			fmt.Fprintf(os.Stderr, "%s: integration tests skipped: %s to run them\n", pkg, howToSet(name))
		}
	}
	goleak.VerifyTestMain(m)
}

// FaultDuration returns $POOLKIT_FAULT_DURATION, or DefaultFaultDuration. It
// fails the test if the variable does not parse.
func FaultDuration(t testing.TB) time.Duration {
	t.Helper()
	v := os.Getenv(EnvFaultDuration)
	if v == "" {
		return DefaultFaultDuration
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration such as 2s", EnvFaultDuration, v)
	}
	return d
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// UniqueName returns a connection name unique to this test run: "poolkit-",
// the test's name (only characters Redis and PostgreSQL accept unquoted in
// CLIENT SETNAME and application_name), the process id and a random suffix.
// It is at most 56 bytes: with a suffix of up to 7 (such as "-admin") it
// still fits in PostgreSQL's 63-byte application_name, which the server
// would otherwise truncate, perhaps into the name itself.
func UniqueName(t testing.TB) string {
	t.Helper()
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	name := unsafeChars.ReplaceAllString(t.Name(), "_")
	suffix := fmt.Sprintf("-%d-%s", os.Getpid(), hex.EncodeToString(b[:]))
	const limit = 56
	if room := limit - len("poolkit-") - len(suffix); len(name) > room {
		name = name[len(name)-room:]
	}
	return strings.ToLower("poolkit-" + name + suffix)
}

// PollInterval is how often Eventually and Poll look again.
const PollInterval = 5 * time.Millisecond

// Eventually polls cond every PollInterval until it returns true or timeout
// passes; then it fails the test with the last message cond returned.
func Eventually(t testing.TB, timeout time.Duration, cond func() (ok bool, msg string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still not true after %v: %s", timeout, msg)
		}
		time.Sleep(PollInterval)
	}
}
