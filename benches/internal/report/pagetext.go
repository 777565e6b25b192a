package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/poolkit/poolkit/benches/internal/results"
)

// writeIcount writes the instruction counts of poolbench icount.
func writeIcount(w io.Writer, r results.Icount) {
	m := r.Machine
	dirty := ""
	if m.Dirty {
		dirty = ", with uncommitted changes"
	}
	fmt.Fprintf(w, `
What one operation costs on one goroutine, in instructions and heap allocations: figures that
a shared, noisy machine cannot blur, and that CI checks for poolkit's own hot paths (see
Reproducing). Each contender runs in a process of its own under `+"`valgrind --tool=callgrind`"+`
with `+"`%s`"+`, once for %s ops and once for %s, after a
warm-up of its own; the instructions of the first run are subtracted from those of the second
and divided by the %s ops between them, so the process's start, the set-up and the warm-up
cancel out. allocs/op is the growth of `+"`runtime.MemStats.Mallocs`"+` over the same ops, exact
with the collector off. Each figure includes the loop and the one indirect call through which
the suite reaches every contender, the same for all, but in Bytes/Direct, whose loop calls Get
and Put itself, as a program does: a Pool's methods (poolkit), the package-level
`+"`bytepool.Get`"+` and `+"`Put`"+` (poolkit-pkg), and sync.Pool. syncpool is sync.Pool, the floor of the
object pools, and for buffers one sync.Pool of `+"`*[]byte`"+` per size. shard is poolkit's pinned
per-P stack (`+"`shard.Local`"+`) alone, popped and pushed, without the pool around it.

Counted at `+"`%s`"+`%s, %s, with %s and %s: `+"`go run ./benches/cmd/%s`"+`.
CI counts poolkit's hot paths (the pool's Acquire + Release, bytepool's Get + Put at 4 KiB and
64 KiB, and in Bytes/Direct) and fails if one rises more than 5%% above `+"`docs/benchmarks/icount-baseline.json`"+`; a change
that moves them on purpose refreshes the baseline in a commit of its own, with
`+"`go run ./benches/cmd/poolbench icount -baseline docs/benchmarks/icount-baseline.json -update`"+`.
`, results.IcountEnv, results.Count(float64(r.N1)), results.Count(float64(r.N2)), results.Count(float64(r.N2-r.N1)),
		m.Commit, dirty, m.Date, m.GoVersion, r.Valgrind, results.ScrubPaths(r.Command))
	results.WriteIcountMarkdown(w, r, "##")
}

// writeE2EMethod explains the end-to-end cases.
func writeE2EMethod(w io.Writer, f results.File) {
	per, size := "", ""
	if e := f.Settings.E2E; e != nil {
		per = " " + results.PerContender(e.Ops, e.DurationNs) + ","
		size = fmt.Sprintf(" (%d here)", e.MaxSize)
	}
	fmt.Fprintf(w, `
## Method

The E2E groups pool real connections to real servers: the line-echo server of
`+"`examples/tcp/echo`"+`, started in the same process as the clients, and Redis and PostgreSQL on this
machine, PostgreSQL also through PgBouncer in transaction pooling mode, started by poolbench on a port
of its own. They run the same way as the rest,%s in alternating rounds, in three phases:
**steady**, as many goroutines as the pools' MaxSize%s, so nobody waits for a connection;
**oversubscribed**, four times as many; and **nopool**, a connection dialled for every request
and closed after it, beside poolkit at the same concurrency.

- **Contenders.** poolkit (a `+"`pool.Pool`"+` of the connection type, default settings);
  jackc/puddle/v2 pooling the same connections, made and closed by the same manager and,
  since puddle checks nothing itself, running the manager's `+"`Recycle`"+` before it hands a
  used connection out again, as poolkit does; for PostgreSQL also pgxmanager (the
  `+"`Pool`"+` facade of `+"`contrib/pgxmanager`"+`, whose `+"`Exec`"+` acquires, runs and releases as
  pgxpool's does), pgxpool and `+"`database/sql`"+` over pgx's stdlib driver (MaxIdleConns
  raised to MaxSize); and
  **dedicated**, one connection per goroutine with no pool and no check, the upper bound.
  Through PgBouncer, pgxmanager and pgxpool alone, in pgx's simple-protocol mode. Every
  verdict is against poolkit, as on every page. The connections are `+"`net.Conn`"+` from
  `+"`manager.Dialer`"+` (echo), the RESP client of `+"`examples/redis`"+` and `+"`*pgx.Conn`"+` from
  `+"`contrib/pgxmanager`"+`; the requests are a line echoed, a PING, and `+"`SELECT 1`"+` over the simple
  query protocol for every PostgreSQL contender, all under `+"`context.Background()`"+`.
- **dials** is the number of connections a contender dialled from its set-up to the end of
  the round, warm-up included (median over the rounds), counted where they are dialled.
- **TIME_WAIT before → after** counts the sockets of the server's port, at either end, in
  state TIME_WAIT in `+"`/proc/net/tcp`"+` and `+"`/proc/net/tcp6`"+`, just before the contender is set up
  and once it has closed its connections, for the round whose difference is the median. A
  socket stays in TIME_WAIT for 60 s on Linux, so *before* holds what earlier rounds (and
  other clients of the server) left. The count for one server cannot pass the local ports
  the kernel gives `+"`connect`"+` (a part of `+"`net.ipv4.ip_local_port_range`"+`%s): near that
  bound a new dial either takes over a port still in TIME_WAIT, where
  `+"`net.ipv4.tcp_tw_reuse`"+` allows it (its default, 2, allows it on the loopback only%s), or
  fails; so *after* − *before* stops following the dials. How near the no-pool phase comes to
  that ceiling, which a pool never approaches, is the point.
`, per, size, portRange(f), twReuse(f))
}

// portRange and twReuse quote the kernel settings of the run, if known.
func portRange(f results.File) string {
	if e := f.Settings.E2E; e != nil && e.LocalPortRange != "" {
		return ", " + strings.Replace(e.LocalPortRange, " ", "–", 1) + " here"
	}
	return ""
}

func twReuse(f results.File) string {
	if e := f.Settings.E2E; e != nil && e.TCPTWReuse != "" {
		return ", " + e.TCPTWReuse + " here"
	}
	return ""
}
