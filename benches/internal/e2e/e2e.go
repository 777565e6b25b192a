// Package e2e is the end-to-end benchmark: pools of real connections to real
// servers — the in-process line-echo server of the examples, Redis and
// PostgreSQL — in three phases:
//
//   - steady: as many goroutines as the pools' MaxSize, so nobody waits
//     for a connection;
//   - oversubscribed: four times as many goroutines, so most wait;
//   - nopool: as many goroutines as MaxSize, one dialling a connection for
//     every request and closing it afterwards, beside poolkit.
//
// In the first two the contenders are poolkit (a pool.Pool of the
// connection type), jackc/puddle/v2 pooling the same connections, for
// PostgreSQL also pgxpool and database/sql over pgx's stdlib driver, and the
// upper bound, "dedicated": one connection per goroutine and no pool. Every
// contender of a server dials with the same code and runs the same request.
// Where asked (Options.PgBouncer), PostgreSQL is also measured through a
// PgBouncer started on a port of its own in transaction pooling mode, with
// pgxmanager and pgxpool in pgx's simple-protocol mode, in the pooled
// phases.
//
// The requests run under context.Background(): a cancellable context would
// add its own cost (pgconn watches it with a goroutine per query), and a
// round ends by a flag between requests.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/poolkit/poolkit/benches/internal/results"
	"github.com/poolkit/poolkit/benches/internal/workload"
	"github.com/poolkit/poolkit/examples/tcp/echo"
)

// Environment variables that name the servers, as in the examples'
// integration tests.
const (
	EnvRedisAddr   = "POOLKIT_REDIS_ADDR"
	EnvPostgresDSN = "POOLKIT_POSTGRES_DSN"
)

// Defaults where the environment names no server (poolbench only: the Go
// benchmarks and tests skip a server whose variable is unset).
const (
	DefaultRedisAddr   = "127.0.0.1:6379"
	DefaultPostgresDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
)

// DefaultMaxSize is the pools' MaxSize unless poolbench's -workers says
// otherwise.
const DefaultMaxSize = 8

// Oversubscription is the oversubscribed phase's goroutines per connection.
const Oversubscription = 4

// Phases, in the order they run.
var Phases = []string{"steady", "oversubscribed", "nopool"}

// Servers, in the order they run; the Server= element of the names
// (ServerPgbouncer, after ServerPostgres, is beside PgBouncer's code).
const (
	ServerEcho     = "echo"
	ServerRedis    = "redis"
	ServerPostgres = "postgres"
)

// probeTimeout bounds the check that a server answers.
const probeTimeout = 5 * time.Second

// applicationName names the PostgreSQL connections (pg_stat_activity).
const applicationName = "poolbench"

// Options say which servers to measure.
type Options struct {
	// RedisAddr is the Redis server's host:port; "" leaves Redis out.
	RedisAddr string
	// PostgresDSN is a PostgreSQL connection string; "" leaves PostgreSQL
	// out, and PgBouncer with it.
	PostgresDSN string
	// PgBouncer asks for a PgBouncer of the run's own in front of
	// PostgreSQL (skipped, with the reason, where pgbouncer is missing).
	PgBouncer bool
	// MaxSize is the pools' MaxSize, and PgBouncer's server pool size;
	// DefaultMaxSize if 0.
	MaxSize int
}

func (o Options) maxSize() int {
	if o.MaxSize > 0 {
		return o.MaxSize
	}
	return DefaultMaxSize
}

// Env is the servers of an end-to-end run: the echo server it started, and
// the external servers that answered.
type Env struct {
	targets []target
	// Skipped lists the servers asked for that did not answer, and why.
	Skipped []results.Skip
	echo    *echo.Server
	bouncer *pgbouncer // nil unless started
}

// target is one server and the entries of its cases.
type target struct {
	server   string // ServerEcho, …
	describe string // "Redis 7.2.4 at 127.0.0.1:6379"
	port     int    // for TIME_WAIT; 0 if not over TCP
	unit     string // what one request is
	// entries returns the contenders of phase (steady and oversubscribed:
	// the last is the baseline, dedicated).
	entries func(ctx context.Context, phase string, maxSize int) []workload.Entry
}

// Open starts the echo server and checks that the external servers of opt
// answer. A server that does not is left out, with a Skip that says why; only
// an echo server that cannot start fails Open. Close stops the echo server.
func Open(ctx context.Context, opt Options) (*Env, error) {
	srv, err := echo.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("e2e: echo server: %w", err)
	}
	env := &Env{echo: srv}
	env.targets = append(env.targets, echoTarget(srv))
	if opt.RedisAddr != "" {
		t, err := redisTarget(ctx, opt.RedisAddr)
		if err != nil {
			env.Skipped = append(env.Skipped, results.Skip{Server: ServerRedis, Reason: err.Error()})
		} else {
			env.targets = append(env.targets, t)
		}
	}
	if opt.PostgresDSN != "" {
		env.openPostgres(ctx, opt)
	}
	return env, nil
}

// openPostgres adds PostgreSQL and, in front of it, a PgBouncer of its
// own, or the reasons they are skipped.
func (e *Env) openPostgres(ctx context.Context, opt Options) {
	t, base, version, err := postgresTarget(ctx, opt.PostgresDSN)
	if err != nil {
		e.Skipped = append(e.Skipped, results.Skip{Server: ServerPostgres, Reason: err.Error()})
		if opt.PgBouncer {
			e.Skipped = append(e.Skipped, results.Skip{Server: ServerPgbouncer, Reason: "PostgreSQL is not measured"})
		}
		return
	}
	e.targets = append(e.targets, t)
	if !opt.PgBouncer {
		return
	}
	b, err := startPgbouncer(ctx, base, opt.maxSize())
	if err != nil {
		e.Skipped = append(e.Skipped, results.Skip{Server: ServerPgbouncer, Reason: err.Error()})
		return
	}
	e.bouncer = b
	e.targets = append(e.targets, pgbouncerTarget(b, opt.PostgresDSN, version, base))
}

// Close stops the echo server and PgBouncer.
func (e *Env) Close() error {
	if e.bouncer != nil {
		e.bouncer.Close()
	}
	return e.echo.Close()
}

// Servers returns the servers that will be measured, in order.
func (e *Env) Servers() []string {
	var out []string
	for _, t := range e.targets {
		out = append(out, t.server)
	}
	return out
}

// Cases returns the cases of every server that answered: for each, the
// steady, oversubscribed and no-pool phases with pools of MaxSize maxSize.
// The requests run under ctx (context.Background() for a measurement; see
// the package doc).
func (e *Env) Cases(ctx context.Context, maxSize int) []workload.Case {
	var cases []workload.Case
	for _, t := range e.targets {
		for _, phase := range Phases {
			c := workload.Case{
				Top: "E2E", Group: "Server=" + t.server, Params: "Phase=" + phase,
				Workers: maxSize, Unit: t.unit, Latency: true, Server: t.describe,
				Entries: t.entries(ctx, phase, maxSize),
			}
			if len(c.Entries) == 0 {
				continue // PgBouncer has no nopool phase
			}
			switch phase {
			case "steady", "oversubscribed":
				if phase == "oversubscribed" {
					c.Workers = Oversubscription * maxSize
				}
				c.Baseline = nameDedicated
				c.Setup = fmt.Sprintf("pools of MaxSize %d; dedicated: one connection per goroutine, no pool", maxSize)
				if t.server == ServerPgbouncer {
					c.Baseline = namePgxmanager
					c.Setup = fmt.Sprintf("pools of MaxSize %d in front of PgBouncer's server pool of %d", maxSize, maxSize)
				}
			case "nopool":
				c.Baseline = namePoolkit
				c.Setup = fmt.Sprintf("poolkit of MaxSize %d; no pool: a connection dialled for each op, closed after it", maxSize)
				c.TimeWaitPort = t.port
			}
			cases = append(cases, c)
		}
	}
	return cases
}

// phaseEntries returns the entries of phase for k, with extra contenders
// (pgxpool, database/sql) after puddle in the pooled phases.
func phaseEntries[T any](ctx context.Context, k conns[T], phase string, maxSize int, extra ...workload.Entry) []workload.Entry {
	if phase == "nopool" {
		return []workload.Entry{k.poolkit(ctx, maxSize), k.noPool(ctx)}
	}
	es := []workload.Entry{k.poolkit(ctx, maxSize), k.puddle(ctx, maxSize)}
	es = append(es, extra...)
	return append(es, k.dedicated(ctx))
}

// portOf returns the port of host:port, or 0.
func portOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}

var passwordKV = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// Redact hides the password of a connection string (URL or key=value), for
// printing.
func Redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && strings.Contains(dsn, "://") {
		r := u.Redacted()
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u2 := *u
			u2.RawQuery = q.Encode()
			r = u2.Redacted()
		}
		return r
	}
	return passwordKV.ReplaceAllString(dsn, "${1}xxxxx")
}

// FromEnv returns the Options of the Go benchmarks and tests: the servers
// their environment variables name, none by default.
func FromEnv() Options {
	return Options{RedisAddr: os.Getenv(EnvRedisAddr), PostgresDSN: os.Getenv(EnvPostgresDSN)}
}

// errUnexpected is a reply that is not the one the request expects.
var errUnexpected = errors.New("e2e: unexpected reply")

// Estimate is about how long the cases of every server take with rounds
// and d per contender and round (see measure.Estimate), all servers
// answering: the echo server and Redis with poolkit, puddle and dedicated in
// the pooled phases, PostgreSQL with pgxmanager, pgxpool and database/sql
// besides, PgBouncer with pgxmanager and pgxpool alone, and poolkit and no
// pool in the nopool phases, which wait up to half a second for the sockets
// to settle.
func Estimate(rounds int, d time.Duration) time.Duration {
	pooled := 3 + 3 + 6 + 2 // contenders of a pooled phase, all servers
	nopool := 3 * 2         // poolkit and no pool of echo, Redis and PostgreSQL
	one := d + max(d/10, time.Millisecond) + 10*time.Millisecond
	return time.Duration(rounds) * (time.Duration(2*pooled+nopool)*one + time.Duration(nopool)*500*time.Millisecond)
}
