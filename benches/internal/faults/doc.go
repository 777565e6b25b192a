// Package faults is the faults phase of poolbench (-mode=faults): clients
// of PostgreSQL and Redis under steady load through one server fault at a
// time, each contender on a fresh pool, and what the fault cost each:
// operations that failed, those that failed although they started after
// the fault had ended, the time back to 90% of the throughput before it,
// the tail latency, the most connections the server saw and the operations
// still stuck when the load ended.
//
// The servers are private: the phase starts a PostgreSQL (initdb and
// pg_ctl, as user postgres when run as root) and a redis-server of its own
// on free ports of the loopback, and stops them at the end; it never
// touches another server. Where a server's binaries are missing it skips
// that server with a reason. Every client reaches its server through two
// proxies in this process: a hold proxy, which counts the connections open
// through it and can partition (hold every byte and every new connection,
// close nothing, then deliver what it held), and behind it a toxiproxy
// proxy, whose latency toxic adds the latency fault.
//
// The faults, each at a fixed moment after the load starts: every
// connection killed (pg_terminate_backend, CLIENT KILL), a server restart,
// a partition, SIGSTOP of every server process, and added latency; the
// lasting ones last FaultSettings.HoldNs.
package faults
