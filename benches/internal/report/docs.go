package report

// groupDocs says what each group measures and why.
var groupDocs = map[string]string{
	"Pool/HotPath": `One goroutine acquires an object and releases it, again and again, with nothing else
running: the fast path itself. For poolkit that is a pop from the calling P's stack, the expiry
checks, and a push back.`,
	"Pool/Parallel": `Goroutines at 1×, 4×, 16× and 64× GOMAXPROCS share one pool of MaxSize 8 or 64, each
acquiring and releasing in a loop. A pool can post a good mean while one goroutine waits far
longer than the rest, hence the latency of the worst goroutine.`,
	"Pool/Oversubscribed": `More goroutines than objects, the state a connection pool lives in: MaxSize 8 shared by
32 and 128 goroutines, each holding its object for no time or for 200 ns of computation (a
calibrated loop, not a wait on the clock), and MaxSize 64 from 2 to 128 goroutines, where a
pool should stay flat. Every op is timed on its own, so the latency columns are those of single
acquires (with the work and the release, and one clock reading, some 20 ns), for the goroutine
with the worst p99. **Jain** is Jain's index of the goroutines' op counts in the round,
(Σx)²/(n·Σx²): 1 when all were served alike, 1/n when one did everything; **min/max** is the
least productive goroutine's ops over the most productive's; both medians over the rounds. A
round lasts at least twice goroutines × 10 ms / GOMAXPROCS, and half a second: the scheduler
lets a goroutine that never blocks run 10 ms before preempting it, so in a shorter round some
goroutines would not run at all, however fair the pool. Where goroutines never wait (MaxSize 64
with up to 64 goroutines) the op counts measure the time slices the scheduler gives them, unless
the pool itself hands the processor on: poolkit's Release yields it about once in 1024 uses of
an object (decision 0008). sync.Pool, which never waits, is left out.`,
	"Pool/TimeoutArmed": `The parallel workload with every acquire bounded by a timeout that never fires. With
Via=Config the bound is set once in the pool (poolkit's AcquireTimeout; the channel and mutex
pools arm a timer only when they must wait). With Via=Context each acquire gets its own
context.WithTimeout, the only way puddle offers; every contender pays for that context,
the floor included.`,
	"Pool/HandOff": `4× GOMAXPROCS goroutines share a pool of one or two objects and yield the processor
while they hold one, so nearly every acquire waits for a release: the cost of waiting and of
being handed an object. sync.Pool, the floor, never waits; it makes an object instead.`,
	"Pool/Exchange": `Each goroutine keeps 8 objects out at once, more than a per-P stack holds, so that
releases overflow into poolkit's shared reservoir and acquires come back through it. ring is
the lock-free bounded ring (the default), mutex the mutex-guarded ring, none no reservoir at
all: the per-P stacks are deepened until they hold MaxSize, and a P whose stack is empty
steals. A buffered channel is the pool without per-P stacks to set them against.`,
	"Pool/StatsOverhead": `poolkit's hot path while another goroutine calls Stats every millisecond or every
10 µs, against the same path with nobody reading. Counting is always on; this is what reading
costs the goroutines that work.`,
	"Bytes/HotPath": `One goroutine gets a buffer and puts it back untouched, 4 KiB to 4 MiB. This flatters
make: it pays for allocating (and zeroing) but not for the page faults of the writes that a
real program would make.`,
	"Bytes/Realistic": `A 64 KiB buffer, one byte written per 4 KiB page, kept reachable from a package-level
variable so that it lives on the heap, then returned: the shape of a network read or an encoder's
output. One goroutine, GOMAXPROCS and 4× GOMAXPROCS.`,
	"Bytes/Sustained": `The realistic op 10 000 times in a row on every goroutine: long enough for make's
garbage to drive the collector, and for pools that shed their contents at each collection to
show it.`,
	"Bytes/Mixed": `Seven power-of-two sizes, 4 KiB to 256 KiB, taken in turn (RoundRobin) or drawn from a
Zipf law that favours the small ones (Zipf), realistic op each; and sixteen sizes that are not
powers of two, 700 B to 300 KB (frames, JSON bodies, records), drawn uniformly, eight held at a
time (NonPowerOfTwo). The sync.Pool contender needs one pool per size, so its buffers fit
exactly; the others serve every size from one pool. **cap/len** is the capacity the Gets got
per byte asked for (median over the rounds); **retained** is the heap still live after the
round and a collection, beyond what was live before the contender was set up: what the pool
keeps, its own structures included.`,
	"Bytes/Burst": `One goroutine takes N buffers of 64 KiB, writes a byte to each, and only then returns them
all, N = 10 to 1000: more than a per-P stack keeps, so the deeper levels of a pool (or the
allocator) serve the rest. **cap/len** and **retained** as in Bytes/Mixed.`,
	"Bytes/Growable": `GOMAXPROCS goroutines each use a growable buffer as a request uses one whose final size
it does not know (an encoder's output, a response body): take a buffer, write 512 bytes at a
time to 2 KiB, 32 KiB or 256 KiB, or, in Sizes=Mixed, to sizes from 1 to 64 KiB with an 8 MiB
outlier every thousand ops, write the content to io.Discard, give the buffer back. poolkit is
bytepool.Buffer from Pool.NewBuffer(0), without a size hint: the pool learns the size; syncpool
a sync.Pool of *bytes.Buffer, which keeps the capacity each buffer reached, outliers included;
bytebufferpool valyala/bytebufferpool, which calibrates the size of the buffers it makes and
the largest it keeps; bytesbuffer a new bytes.Buffer per use, no pool. **cap/len** is the
capacity the buffers reached per byte written; **retained** as in Bytes/Mixed.`,
	"Bytes/Contention": `The realistic op on many goroutines, with poolkit's per-P depth at 1, 4 and 8 buffers per
size class, beside the other contenders, which have no such setting.`,
	"Bytes/FullOverwrite": `The buffer is overwritten entirely before use, so the zeroing make does is wasted work
that a pool saves.`,
	"E2E/Server=echo": `The line-echo server of examples/tcp/echo, in this process: a line written, the same line
read back, over loopback TCP. The server's goroutines share the CPUs with the clients, so this
is the cheapest round trip the machine offers, and the one where a pool's own cost shows most.`,
	"E2E/Server=redis": `Redis on this machine: a PING and its PONG on the example's RESP client, the pool's
Recycle peeking at the socket before reuse.`,
	"E2E/Server=postgres": `PostgreSQL on this machine: SELECT 1 over the simple query protocol. Without a pool every
request pays a connection start-up, a server process included.`,
	"E2E/Server=pgbouncer": `The same PostgreSQL behind PgBouncer in transaction pooling mode, started by poolbench on a
port of its own with a server pool as large as the clients' MaxSize: the deployment where a
client pool sits in front of a server-side one. pgxmanager and pgxpool run every query in
pgx's simple-protocol mode (QueryExecModeSimpleProtocol), which needs no prepared statement
on a server connection that the next transaction may not get.`,
	"Bytes/StatsOverhead": `bytepool's 64 KiB hot path while another goroutine calls Stats every millisecond or
every 10 µs, against the same path with nobody reading.`,
}
