// Package keyed is poolbench's keyed mode (-mode=keyed): poolkit's keyed
// pool of pgx connections (pgxmanager.OpenKeyed over pool.Keyed), one key
// per tenant database, against pools kept per tenant, on a real
// PostgreSQL, where a connect costs what it costs. It has three cases
// (-keyed-cases):
//
//   - crowded: 100 tenant databases on a server whose max_connections is
//     smaller than the tenants, 64 goroutines running queries back to
//     back, each query's tenant picked by a Zipf law: the keyed pool,
//     bounded across the tenants, against a pgxpool per tenant of
//     MaxConns 4 and of MaxConns 1, bounded per tenant only.
//   - steady: 20 tenant databases on a server with room for every
//     contender, 48 goroutines, each operation's tenant picked by a Zipf
//     law of exponent 1.2, one operation in 10 a short transaction: the
//     keyed pool of MaxSize 20 and of 12 (MaxSizePerKey 4) against the
//     static split of the same 20 connections, 20 pgxpools of MaxConns 1.
//     The headline is the keyed pool's successful operations per second
//     over the static split's, in the same round.
//   - shifting: steady, with the tenants' ranks in the law dealt again
//     every 3 s, so that the hottest tenants change under the pools.
//
// The crowded case's server is private, as the faults phase's: the mode
// starts a PostgreSQL of its own (localsrv.Postgres) with max_connections
// 40 and two connections reserved for superusers, makes the tenant
// databases (tenant_000 …) from a template, and has the clients connect as
// a role that is not a superuser; a superuser's connection counts the
// server's client connections in pg_stat_activity every 20 ms, itself
// left out. Where PostgreSQL's binaries are missing the case is skipped,
// with the reason.
//
// The steady and shifting cases (the split cases) run on the same private
// server, its first 20 tenants, by default: no other work shares it, and
// every published run has the same server. Given a connection string
// (Options.DSN, poolbench's -keyed-postgres, such as
// $POOLKIT_POSTGRES_DSN's), they run on that server instead, whose user
// must be a superuser: they make their tenant databases on it
// (poolbench_keyed_TAG_00 …, TAG random) and drop them after. Each
// contender's connections carry an application_name of their own, by
// which a superuser's connection counts them in pg_stat_activity every
// 5 ms; no two contenders run at once, each starting once the previous
// one's connections are gone.
//
// Per contender and round, the crowded case reports the successful
// queries per second, the failed ones and those the server refused a
// connection for (SQLSTATE 53300), the tenants starved, the worst and the
// median tenant's p99 of acquire and of the whole query, the connections
// tried, poolkit's evictions and the most connections the server had at
// once. The split cases report the successful operations per second and
// their ratio to the static split's in the same round, the p50 and p99 of
// an operation, the errors (those refused with 53300 among them), the
// connections tried per connection handed out, over the run and after its
// warm-up, poolkit's evictions by reason (Stats().ClosedBy of every
// pool.CloseEvict… reason) and the most connections of the contender the
// server had at once.
//
// BenchmarkKeyedTenants (package benches) runs the split cases from go
// test against $POOLKIT_POSTGRES_DSN's server, a round per iteration:
//
//	POOLKIT_POSTGRES_DSN=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test -run '^$' -bench KeyedTenants -benchtime 3x -v ./benches
//
// poolbench runs them alone with its own duration and rounds:
//
//	go run ./benches/cmd/poolbench -mode=keyed -keyed-cases=steady,shifting -duration=10s -rounds=3
package keyed
