package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is a private server the phase starts, faults and stops.
type server interface {
	// Name is "postgres" or "redis".
	Name() string
	// Describe says what it is: "PostgreSQL 15.19, private, on 127.0.0.1".
	Describe() string
	// Addr is its host:port on the loopback.
	Addr() string
	// KillClients ends every client connection but the caller's own.
	KillClients(ctx context.Context) (int, error)
	// Stop shuts the server down; Start starts it again on the same port
	// and returns once it answers.
	Stop(ctx context.Context) error
	Start(ctx context.Context) error
	// Pids are the processes of the server, for SIGSTOP and SIGCONT.
	Pids() ([]int, error)
	// Healthy returns nil once the server answers and no client of the
	// phase is connected.
	Healthy(ctx context.Context) error
	// Close stops the server and removes its files.
	Close() error
}

// errMissing is a server whose binaries are not installed.
var errMissing = errors.New("not installed")

// freePort returns a port of the loopback that nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// findBinary finds name on $PATH or in Debian's PostgreSQL directories.
func findBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", fmt.Errorf("%s: %w", name, errMissing)
}

// runAs is how the phase runs a server's commands: as the user postgres
// when the process is root (PostgreSQL refuses to run as root), else as
// itself.
type runAs struct {
	wrap     []string // "runuser -u postgres --", or nothing
	uid, gid int      // the owner the server's files need; -1: leave them
}

// serverUser returns the runAs of PostgreSQL's processes.
func serverUser() (runAs, error) {
	if os.Geteuid() != 0 {
		return runAs{uid: -1, gid: -1}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return runAs{}, fmt.Errorf("running as root needs a user postgres to run PostgreSQL: %w", err)
	}
	runuser, err := exec.LookPath("runuser")
	if err != nil {
		return runAs{}, fmt.Errorf("running as root needs runuser to run PostgreSQL as postgres: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return runAs{wrap: []string{runuser, "-u", "postgres", "--"}, uid: uid, gid: gid}, nil
}

// command is bin with args, run as r says.
func (r runAs) command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	all := append(append(append([]string{}, r.wrap...), bin), args...)
	return exec.CommandContext(ctx, all[0], all[1:]...)
}

// mkdir makes a directory the server's user owns.
func (r runAs) mkdir(parent, pattern string) (string, error) {
	dir, err := os.MkdirTemp(parent, pattern)
	if err != nil {
		return "", err
	}
	if r.uid >= 0 {
		if err := os.Chown(dir, r.uid, r.gid); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// run runs cmd and returns an error with its output if it fails.
func run(cmd *exec.Cmd) error {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(cmd.Args[0]), err, strings.TrimSpace(lastLines(out.String(), 3)))
	}
	return nil
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " / ")
}

// signalAll sends sig to every pid.
func signalAll(pids []int, sig syscall.Signal) error {
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill -%d %d: %w", sig, pid, err))
		}
	}
	return errors.Join(errs...)
}

// children returns the pids whose parent is pid, from /proc.
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so cut after ')'.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				out = append(out, child)
			}
		}
	}
	return out
}

// waitFor calls ok until it returns nil or ctx ends, every 50 ms.
func waitFor(ctx context.Context, ok func(context.Context) error) error {
	for {
		err := ok(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
