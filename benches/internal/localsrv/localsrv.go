// Package localsrv starts servers of poolbench's own on the loopback, for
// the faults phase, the keyed case and PgBouncer: a private PostgreSQL
// cluster (Postgres), free ports, binaries found on $PATH or in Debian's
// PostgreSQL directories, commands run as the user postgres when the process
// is root (PostgreSQL and PgBouncer refuse root), and signals to a server's
// processes.
package localsrv

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

// ErrMissing is a server whose binaries are not installed.
var ErrMissing = errors.New("not installed")

// FreePort returns a port of the loopback that nothing listens on now.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// FindBinary finds name on $PATH or in Debian's PostgreSQL directories.
func FindBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", fmt.Errorf("%s: %w", name, ErrMissing)
}

// RunAs is how the phase runs a server's commands: as the user postgres
// when the process is root (PostgreSQL refuses to run as root), else as
// itself.
type RunAs struct {
	wrap     []string // "runuser -u postgres --", or nothing
	uid, gid int      // the owner the server's files need; -1: leave them
}

// ServerUser returns the RunAs of PostgreSQL's processes.
func ServerUser() (RunAs, error) {
	if os.Geteuid() != 0 {
		return RunAs{uid: -1, gid: -1}, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return RunAs{}, fmt.Errorf("running as root needs a user postgres to run PostgreSQL: %w", err)
	}
	runuser, err := exec.LookPath("runuser")
	if err != nil {
		return RunAs{}, fmt.Errorf("running as root needs runuser to run PostgreSQL as postgres: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return RunAs{wrap: []string{runuser, "-u", "postgres", "--"}, uid: uid, gid: gid}, nil
}

// Command is bin with args, run as r says.
func (r RunAs) Command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	all := append(append(append([]string{}, r.wrap...), bin), args...)
	return exec.CommandContext(ctx, all[0], all[1:]...)
}

// Mkdir makes a directory the server's user owns.
func (r RunAs) Mkdir(parent, pattern string) (string, error) {
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

// Run runs cmd and returns an error with its output if it fails.
func Run(cmd *exec.Cmd) error {
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

// SignalAll sends sig to every pid.
func SignalAll(pids []int, sig syscall.Signal) error {
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill -%d %d: %w", sig, pid, err))
		}
	}
	return errors.Join(errs...)
}

// Children returns the pids whose parent is pid, from /proc.
func Children(pid int) []int {
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

// WaitFor calls ok until it returns nil or ctx ends, every 50 ms.
func WaitFor(ctx context.Context, ok func(context.Context) error) error {
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

// WriteFile writes a file the server's user owns.
func (r RunAs) WriteFile(path string, body []byte) error {
	if err := os.WriteFile(path, body, 0o600); err != nil {
		return err
	}
	if r.uid >= 0 {
		return os.Chown(path, r.uid, r.gid)
	}
	return nil
}
