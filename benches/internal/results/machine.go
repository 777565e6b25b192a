package results

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// Machine describes where a run was measured.
type Machine struct {
	CPU        string `json:"cpu"`   // model name from /proc/cpuinfo, or "unknown"
	Cores      int    `json:"cores"` // logical CPUs usable by the process (runtime.NumCPU)
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Kernel     string `json:"kernel"` // uname -sr, or /proc/version, or "unknown"
	Date       string `json:"date"`   // start of the run, RFC 3339, UTC
	Commit     string `json:"commit"` // git rev-parse HEAD, or "unknown"
	// Dirty says that tracked files differed from Commit when the run began.
	Dirty bool `json:"dirty,omitempty"`
	// Compared is the version of each module of ComparedModules built into
	// the run: the code poolkit was measured against.
	Compared []Module `json:"compared,omitempty"`
}

// Module is a module's path and version.
type Module struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

// ComparedModules are the modules of the contenders other than poolkit's
// own and the standard library's, in the order a reader meets them.
var ComparedModules = []string{
	"github.com/jackc/puddle/v2",
	"github.com/valyala/bytebufferpool",
	"github.com/libp2p/go-buffer-pool",
	"github.com/jackc/pgx/v5",
	"github.com/redis/go-redis/v9",
}

// compared picks ComparedModules out of deps, in that order.
func compared(deps []*debug.Module) []Module {
	var out []Module
	for _, path := range ComparedModules {
		for _, d := range deps {
			if d.Path != path {
				continue
			}
			if d.Replace != nil {
				d = d.Replace
			}
			out = append(out, Module{Path: path, Version: d.Version})
		}
	}
	return out
}

// comparedModules is compared of the running binary's dependencies.
func comparedModules() []Module {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return compared(bi.Deps)
}

// ThisMachine describes the machine the process runs on, now.
func ThisMachine() Machine {
	return Machine{
		CPU:        cpuModel(),
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Kernel:     kernel(),
		Date:       time.Now().UTC().Format(time.RFC3339),
		Commit:     commit(),
		Dirty:      command("git", "status", "--porcelain", "--untracked-files=no") != "",
		Compared:   comparedModules(),
	}
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// command runs name with args for at most two seconds and returns its
// trimmed output, or "" on any failure.
func command(name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(out))
}

func kernel() string {
	if k := command("uname", "-sr"); k != "" {
		return k
	}
	if b, err := os.ReadFile("/proc/version"); err == nil {
		// "Linux version 6.8.0-45-generic (…) …": keep "Linux 6.8.0-45-generic".
		if f := strings.Fields(string(b)); len(f) >= 3 {
			return f[0] + " " + f[2]
		}
	}
	return "unknown"
}

func commit() string {
	if c := command("git", "rev-parse", "HEAD"); c != "" {
		return c
	}
	return "unknown"
}
