// Package benches compares poolkit with the pools Go programs use instead:
// jackc/puddle, a channel pool, a mutex-guarded slice and sync.Pool for
// objects; make, sync.Pool, libp2p/go-buffer-pool and valyala/bytebufferpool
// for byte buffers.
//
// It is a module of its own, so that the competitors are dependencies of the
// benchmarks only, never of poolkit. The benchmarks are Go benchmarks, one
// function per family and one sub-benchmark per case and contender:
//
//	go test -run '^$' -bench 'Pool/HotPath' -count 10 ./benches/...
//	go test -run '^$' -bench 'Bytes/Realistic' -count 10 ./benches/...
//
// BenchmarkE2E pools real connections — to an in-process echo server, and
// to Redis and PostgreSQL where POOLKIT_REDIS_ADDR and POOLKIT_POSTGRES_DSN
// name them — against puddle, pgxpool, database/sql (pgx's stdlib driver),
// one connection per goroutine and no pool at all (internal/e2e):
//
//	go test -run '^$' -bench 'E2E/Server=echo' -count 10 ./benches/...
//
// BenchmarkKeyedTenants runs the keyed mode's split cases (internal/keyed)
// on the server $POOLKIT_POSTGRES_DSN names (a superuser's: the cases make
// 20 tenant databases on it and drop them after): poolkit's keyed pool
// against a static split of the same connections, a round per iteration,
// 6 s per contender and round ($POOLKIT_KEYED_DURATION), with queries per
// second, the keyed pools' ratio to the static split, connects per acquire
// and the most backends as its metrics:
//
//	POOLKIT_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test -run '^$' -bench KeyedTenants -benchtime 3x -v ./benches
//
// Their output is benchstat's input. The poolbench command (cmd/poolbench)
// runs the same cases in alternating rounds and reports, per contender, the
// median and the spread of the rounds, the worst goroutine's latency and a
// Mann–Whitney U test against poolkit (internal/measure, internal/results);
// it also runs PostgreSQL through a PgBouncer of its own, and clients of
// private PostgreSQL and Redis servers through five faults
// (internal/faults), and pools of connections to 100 tenant databases of
// one private PostgreSQL with fewer connections than tenants, poolkit's
// keyed pool against a pgxpool per tenant, and to 20 tenant databases,
// the keyed pool against a static split of the same connections
// (internal/keyed). `poolbench
// publish` measures the whole published set at one clean commit and
// generates docs/BENCHMARKS.md, its pages and charts and the README's
// headline (internal/report).
package benches
