// Package keyed is the keyed case of poolbench (-mode=keyed): many tenant
// databases on one PostgreSQL whose max_connections is smaller than the
// tenants, 64 goroutines running queries back to back, each query's tenant
// picked by a Zipf law, and three ways to keep the tenants' connections:
// poolkit's keyed pool (pgxmanager.OpenKeyed over pool.Keyed), bounded
// across the tenants, and a pgxpool per tenant of MaxConns 4 and of
// MaxConns 1, bounded per tenant only.
//
// The server is private, as the faults phase's: the case starts a
// PostgreSQL of its own (localsrv.Postgres) with max_connections 40 and
// two connections reserved for superusers, makes the tenant databases
// (tenant_000 …) from a template, and has the clients connect as a role
// that is not a superuser; a superuser's connection counts the server's
// client connections in pg_stat_activity every 20 ms, itself left out.
// Where PostgreSQL's binaries are missing the case is skipped, with the
// reason.
//
// Per contender and round: the successful queries per second, the failed
// ones and those the server refused a connection for (SQLSTATE 53300), the
// tenants starved, the worst and the median tenant's p99 of acquire and of
// the whole query, the connections tried, poolkit's evictions
// (Stats().ClosedBy[pool.CloseEvict]) and the most connections the server
// had at once.
package keyed
