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
// Their output is benchstat's input. The poolbench command (cmd/poolbench)
// runs the same cases in alternating rounds, reports the spread and the
// latency distribution, and generates docs/BENCHMARKS.md.
package benches
