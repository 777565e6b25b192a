package bytepool

import "github.com/poolkit/poolkit/internal/shard"

// Stats is a snapshot of a [Pool]'s counters.
//
// The counters of the fast path, hits on the calling P's stack or spill and
// steals from other Ps' spills, are kept by shard.Local per P (a plain add on
// the P's own line, inside the section it already runs pinned) and summed by
// Stats: counting costs the fast path no shared cache line and no atomic
// read-modify-write. The other counters are atomics updated only on the slow
// paths. Each counter is read without stopping the pool, so under concurrent
// use a snapshot is approximate: it may miss operations in flight, and the
// derived sum Gets may be off by as much. Once the pool is quiescent they are
// exact, with one exception: hits and steals that a Get counts on per-P
// tiers that Trim, idle trimming or a GOMAXPROCS increase retired while that
// Get ran are lost (see shard.Local.Stats).
type Stats struct {
	// Gets = LocalHits + ExchangeHits + StealHits + Allocs + Oversize.
	Gets uint64
	// LocalHits are Gets served by the calling P's stack or spill.
	LocalHits uint64
	// ExchangeHits are Gets served by a class's shared exchange.
	ExchangeHits uint64
	// StealHits are Gets served by another P's spill.
	StealHits uint64
	// Allocs are Gets that allocated a class buffer (every level missed).
	Allocs uint64
	// AllocFailures are Allocs for which the Allocator failed and the pool
	// used make instead.
	AllocFailures uint64
	// Oversize are Gets above MaxSize: plain allocations, not pooled.
	Oversize uint64
	// Parked are Puts filed in an exchange. (Puts filed on a per-P stack or
	// spill are not counted: that would cost the fast path a counter of its
	// own.)
	Parked uint64
	// Drops are Puts whose buffer was not kept: its class was at its bound,
	// or no class takes its capacity.
	Drops uint64
	// Released are buffers let go from the pool's tiers: by Trim, by idle
	// trimming, when a GOMAXPROCS increase replaced the per-P tiers, and by
	// the cleanup of a collected pool; the other Ps' stacks of replaced
	// per-P tiers as they are released (two GC ticks after the replacement,
	// at a class's third pending replacement, or by Trim).
	Released uint64
	// Retained is the number of bytes kept for reuse: the sum over Classes,
	// and ReadyRetained.
	Retained int64
	// ReadyRetained is the bytes of storage kept with the Buffers Free kept
	// ready for the next NewBuffer (at most one per P; see Buffer).
	ReadyRetained int64
	// MaxRetained is the retention bound as it stands: the sum over the
	// classes of ((Depth + Spill) × P + ExchangeCap) × Size, where Depth and
	// Spill are the class's per-P capacity as demand has grown it and P the
	// number of its per-P tiers, GOMAXPROCS when they were made or, if it
	// has grown since, when it last grew. At most Config.MaxRetained unless
	// GOMAXPROCS grew (see Pool).
	MaxRetained int64
	// Procs is GOMAXPROCS as it was when the Pool was made.
	Procs int
	// BufferSize is the size a Buffer made without a size hint starts at:
	// what the pool has learnt its Buffers reach (see Buffer), 0 before it
	// has learnt anything.
	BufferSize int
	// Classes holds one entry per size class, smallest first.
	Classes []ClassStats
}

// ClassStats describes one size class.
type ClassStats struct {
	Size        int // bytes of one buffer
	Depth       int // per-P stack depth as demand has grown it (0: no per-P tiers)
	Spill       int // per-P spill capacity as demand has grown it (0: none)
	ExchangeCap int // exchange capacity (0: no exchange)

	Gets         uint64 // LocalHits + ExchangeHits + StealHits + Allocs
	LocalHits    uint64
	ExchangeHits uint64
	StealHits    uint64
	Allocs       uint64
	Parked       uint64 // Puts filed in the exchange
	Drops        uint64
	Released     uint64
	// Resizes counts the times the budget gave this class's per-P tiers
	// more or less room (see Pool).
	Resizes uint64

	// Buffers is the number of buffers kept for reuse, and Retained the
	// bytes they hold (Buffers × Size). The per-P part is the sum of each
	// stack's and spill's count, read without stopping its owner:
	// approximate while Puts and Gets run (see shard.Local.Len). Replaced
	// tiers waiting to be released are not counted (see Pool.Trim for their
	// bound).
	Buffers  int
	Retained int64
}

// Stats returns a snapshot of the pool's counters. It allocates; do not call
// it on a hot path.
func (p *Pool) Stats() Stats {
	p.ensure()
	// trimMu keeps each class's capacity and its counters consistent with
	// a resize (see resize).
	p.trimMu.Lock()
	defer p.trimMu.Unlock()
	s := Stats{Procs: p.procs, BufferSize: p.learn.startSize(p), Oversize: p.oversize.Load(), Classes: make([]ClassStats, len(p.classes))}
	s.Drops = p.unfiled.Load()
	for i := range p.classes {
		cl := &p.classes[i]
		local := cl.localStats()
		c := ClassStats{
			Size:         cl.size,
			Depth:        cl.depth,
			Spill:        cl.spill,
			ExchangeCap:  cl.ex.Cap(),
			LocalHits:    local.Hits,
			ExchangeHits: cl.exchangeHits(),
			StealHits:    local.Steals,
			Allocs:       cl.allocs.Load(),
			Drops:        cl.drops.Load(),
			Released:     cl.released.Load(),
			Resizes:      cl.resizes,
		}
		c.Gets = c.LocalHits + c.ExchangeHits + c.StealHits + c.Allocs
		c.Parked = cl.parked()
		l := cl.local.Load()
		if l != nil {
			c.Buffers = l.Len()
		}
		c.Buffers += cl.ex.Len()
		c.Retained = int64(c.Buffers) * int64(cl.size)
		s.Classes[i] = c
		s.LocalHits += c.LocalHits
		s.ExchangeHits += c.ExchangeHits
		s.StealHits += c.StealHits
		s.Allocs += c.Allocs
		s.AllocFailures += cl.allocFails.Load()
		s.Parked += c.Parked
		s.Drops += c.Drops
		s.Released += c.Released
		s.Retained += c.Retained
		procs := 0
		if l != nil {
			procs = l.Procs()
		}
		s.MaxRetained += int64((cl.depth+cl.spill)*procs+c.ExchangeCap) * int64(cl.size)
	}
	s.ReadyRetained = p.ready.table().retained()
	s.Retained += s.ReadyRetained
	s.MaxRetained += int64(p.readyMax) * int64(p.procs)
	s.Gets = s.LocalHits + s.ExchangeHits + s.StealHits + s.Allocs + s.Oversize
	return s
}

// localStats returns the counters of the class's per-P tiers, those resize
// replaced and retired ones included, less the pops that were drains: Gets
// served by the caller's own stack or spill (Hits), and by another P's
// spill (Steals). Called with trimMu held.
func (cl *class) localStats() shard.Stats {
	s := shard.Stats{Hits: cl.pastHits.Load(), Steals: cl.pastSteals.Load()}
	for _, r := range cl.replaced {
		rs := r.l.Stats()
		s.Hits += rs.Hits - min(rs.Hits, r.hits)
		s.Steals += rs.Steals - min(rs.Steals, r.steals)
	}
	l := cl.local.Load()
	if l == nil {
		return s
	}
	// Drains are read before the Local's counts: a drain counts itself
	// after its pops, so every drain read here is in ls (see exchangeHits).
	dh, ds := cl.drainedHits.Load(), cl.drainedSteals.Load()
	ls := l.Stats()
	s.Hits += ls.Hits - min(ls.Hits, dh)
	s.Steals += ls.Steals - min(ls.Steals, ds)
	return s
}
