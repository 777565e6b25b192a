package pgxmanager_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Servers of the tests' own: a private PostgreSQL for the tests that kill
// its backends or freeze it, and PgBouncer. Neither binary runs as root;
// as root, the tests run them as the user postgres.

// serverUser returns the credential to run a server's binaries with (nil:
// the test's own user), or skips the test.
func serverUser(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("running as root and no user postgres to run the server as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// serverDir returns a temporary directory the server's user owns.
func serverDir(t testing.TB, cred *syscall.Credential) string {
	t.Helper()
	dir := t.TempDir()
	if cred != nil {
		// t.TempDir's parent is the test's own, mode 0700: open the path.
		for d := dir; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// findBinary returns the path of a server binary, looked up in PATH and
// then in dirs (patterns), or skips the test.
func findBinary(t testing.TB, name string, dirs ...string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, pattern := range dirs {
		if m, _ := filepath.Glob(filepath.Join(pattern, name)); len(m) > 0 {
			return m[len(m)-1]
		}
	}
	t.Skipf("%s not found in PATH or %v: install it to run this test", name, dirs)
	return ""
}

// run runs a server binary as cred, failing the test with its output on
// an error.
func run(t testing.TB, cred *syscall.Credential, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, out.String())
	}
}

// freePort returns a TCP port of 127.0.0.1 that nothing listens on.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// privatePostgres is a PostgreSQL cluster of a test's own.
type privatePostgres struct {
	t    testing.TB
	data string // its data directory
	dsn  string
}

var pgBinDirs = []string{"/usr/lib/postgresql/*/bin", "/usr/local/pgsql/bin"}

// startPostgres initialises and starts a private PostgreSQL on a port of
// its own (trust authentication, user postgres, database postgres),
// stopped at the end of the test, with settings (name=value) passed to the
// server beside the defaults (max_connections=100). It skips the test
// where initdb or pg_ctl is missing.
func startPostgres(t testing.TB, settings ...string) *privatePostgres {
	t.Helper()
	initdb := findBinary(t, "initdb", pgBinDirs...)
	pgctl := findBinary(t, "pg_ctl", pgBinDirs...)
	cred := serverUser(t)
	dir := serverDir(t, cred)
	data := filepath.Join(dir, "data")
	run(t, cred, initdb, "--no-sync", "-A", "trust", "-U", "postgres", "-E", "UTF8", "-D", data)
	port := freePort(t)
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100", port, dir)
	for _, kv := range settings {
		opts += " -c " + kv
	}
	run(t, cred, pgctl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start")
	pg := &privatePostgres{t: t, data: data,
		dsn: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)}
	t.Cleanup(func() {
		pg.signal(syscall.SIGCONT) // a frozen server cannot stop
		run(t, cred, pgctl, "-D", data, "-m", "immediate", "-w", "stop")
	})
	return pg
}

// pids returns the postmaster's PID and its children's (the backends and
// the server's own processes).
func (pg *privatePostgres) pids() (postmaster int, children []int) {
	pg.t.Helper()
	b, err := os.ReadFile(filepath.Join(pg.data, "postmaster.pid"))
	if err != nil {
		pg.t.Fatal(err)
	}
	postmaster, err = strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil {
		pg.t.Fatal(err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		st, err := os.ReadFile(p)
		if err != nil {
			continue // it exited
		}
		// pid (comm) state ppid ...: comm may hold spaces; ppid follows the last ')'.
		f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(postmaster) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			children = append(children, pid)
		}
	}
	return postmaster, children
}

// signal sends sig to the postmaster and every child: SIGSTOP freezes the
// whole server (the postmaster first, so that it forks no new backend),
// SIGCONT thaws it (the children first). It returns when the first signal
// was sent (the processes are listed before).
func (pg *privatePostgres) signal(sig syscall.Signal) time.Time {
	postmaster, children := pg.pids()
	if sig == syscall.SIGSTOP {
		sent := time.Now()
		_ = syscall.Kill(postmaster, sig)
		_, children = pg.pids()
		for _, pid := range children {
			_ = syscall.Kill(pid, sig)
		}
		return sent
	}
	sent := time.Now()
	for _, pid := range children {
		_ = syscall.Kill(pid, sig)
	}
	_ = syscall.Kill(postmaster, sig)
	return sent
}

// waitReady waits until the server accepts a TCP connection.
func waitReady(t *testing.T, addr string) {
	t.Helper()
	eventually(t, 30*time.Second, func() (bool, string) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, err.Error()
		}
		c.Close()
		return true, ""
	})
}
