package workload

import (
	"fmt"
	"math/rand/v2"

	"github.com/poolkit/poolkit/benches/internal/contenders"
)

// Page is the stride of the realistic workloads: one write per page, so that
// a fresh buffer pays its page faults as it does in real programs.
const Page = 4 << 10

// Sink keeps buffers reachable from a package-level variable, so that they
// escape to the heap: make pays what it pays in real programs. Each
// goroutine writes its own padded slot.
var Sink [256]struct {
	B []byte
	_ [40]byte
}

func sink(i int, b []byte) { Sink[i%len(Sink)].B = b }

// ClearSink drops what Sink holds, so that it keeps no buffer alive; call
// it only while no op runs.
func ClearSink() {
	for i := range Sink {
		Sink[i].B = nil
	}
}

// tally counts, per goroutine, the bytes a memory case's Gets asked for and
// the capacity they got; each goroutine writes its own padded slot.
type tally struct {
	slots []struct {
		asked, capacity int64
		_               [48]byte
	}
}

func newTally(workers int) *tally {
	t := &tally{}
	t.slots = make([]struct {
		asked, capacity int64
		_               [48]byte
	}, workers)
	return t
}

// add counts a Get of n bytes by goroutine i that got b.
func (t *tally) add(i, n int, b []byte) {
	t.slots[i].asked += int64(n)
	t.slots[i].capacity += int64(cap(b))
}

// read sums the slots; only while no op runs.
func (t *tally) read() (asked, capacity int64) {
	for i := range t.slots {
		asked += t.slots[i].asked
		capacity += t.slots[i].capacity
	}
	return asked, capacity
}

// touch writes one byte per page of b.
func touch(b []byte) {
	for i := 0; i < len(b); i += Page {
		b[i] = byte(i)
	}
}

// HotPathSizes are the sizes of Bytes/HotPath.
var HotPathSizes = []int{4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB}

// MixedSizes are the seven sizes of Bytes/Mixed, smallest first.
var MixedSizes = []int{4 * KiB, 8 * KiB, 16 * KiB, 32 * KiB, 64 * KiB, 128 * KiB, 256 * KiB}

// BurstCounts are the N of Bytes/Burst.
var BurstCounts = []int{10, 50, 100, 1000}

// ContentionDepths are the per-P depths of poolkit in Bytes/Contention.
var ContentionDepths = []int{1, 4, 8}

// OverwriteSizes are the sizes of Bytes/FullOverwrite.
var OverwriteSizes = []int{4 * KiB, 64 * KiB, 1 * MiB}

// SustainedOps is how many ops each goroutine of Bytes/Sustained runs in one go.
const SustainedOps = 10_000

// realisticSize is the buffer of the realistic workloads.
const realisticSize = 64 * KiB

// allBytes lists every byte-pool contender; the baseline, make, is second.
var allBytes = []string{"poolkit", "make", "syncpool", "gobufferpool", "bytebufferpool"}

// bytesEntries makes one entry per byte-pool contender, each running the op
// that mk builds on its instance.
func bytesEntries(cfg contenders.BytesConfig, names []string, mk func(p contenders.Bytes) func(i int) Op) []Entry {
	return entries(cfg, names, func(name string) (string, func(contenders.BytesConfig) (contenders.Bytes, error), error) {
		c, err := contenders.BytesByName(name)
		return c.Name, c.New, err
	}, mk)
}

// talliedEntries is bytesEntries for the cases with Memory: mk builds the
// ops with a tally of their Gets, which the instance reports.
func talliedEntries(cfg contenders.BytesConfig, names []string, workers int, mk func(p contenders.Bytes, t *tally) func(i int) Op) []Entry {
	return entries(cfg, names, func(name string) (string, func(contenders.BytesConfig) (talliedBytes, error), error) {
		c, err := contenders.BytesByName(name)
		return c.Name, func(cfg contenders.BytesConfig) (talliedBytes, error) {
			p, err := c.New(cfg)
			return talliedBytes{p, newTally(workers)}, err
		}, err
	}, func(tb talliedBytes) func(int) Op { return mk(tb.Bytes, tb.t) })
}

// talliedBytes is a contender with the tally of its instance's Gets.
type talliedBytes struct {
	contenders.Bytes
	t *tally
}

// Tally reports the tally (Instance.Tally).
func (tb talliedBytes) Tally() (asked, capacity int64) { return tb.t.read() }

// getPut is the hot path: Get(n), Put, nothing written.
func getPut(n int) func(contenders.Bytes) func(int) Op {
	return func(p contenders.Bytes) func(int) Op {
		return func(int) Op {
			return func() error {
				p.Put(p.Get(n))
				return nil
			}
		}
	}
}

// realistic is Get(n), one write per page, the buffer escapes, Put.
func realistic(n int) func(contenders.Bytes) func(int) Op {
	return func(p contenders.Bytes) func(int) Op {
		return func(i int) Op {
			return func() error {
				b := p.Get(n)
				touch(b.B)
				sink(i, b.B)
				p.Put(b)
				return nil
			}
		}
	}
}

// BytesHotPath is one goroutine getting and putting a buffer it does not
// touch, from 4 KiB to 4 MiB.
func BytesHotPath() []Case {
	var cases []Case
	for _, n := range HotPathSizes {
		cases = append(cases, Case{
			Top: "Bytes", Group: "HotPath", Params: "Size=" + SizeName(n), Workers: 1,
			Unit: "one Get + Put, nothing written", Baseline: "make",
			Entries: bytesEntries(contenders.BytesConfig{Sizes: []int{n}}, allBytes, getPut(n)),
		})
	}
	return cases
}

// BytesRealistic is the 64 KiB realistic op (one write per page, the buffer
// escapes) by one goroutine, GOMAXPROCS and 4× GOMAXPROCS goroutines (or
// one and workers).
func BytesRealistic(workers int) []Case {
	var cases []Case
	gs := []int{1, Procs(), 4 * Procs()}
	if workers > 0 {
		gs = []int{1, workers}
	}
	for _, g := range dedupe(gs) {
		cases = append(cases, Case{
			Top: "Bytes", Group: "Realistic", Params: fmt.Sprintf("Size=64KiB/Goroutines=%d", g),
			Workers: g, Unit: "one Get, a write per 4 KiB page, Put", Baseline: "make", Latency: true,
			Entries: bytesEntries(contenders.BytesConfig{Sizes: []int{realisticSize}}, allBytes, realistic(realisticSize)),
		})
	}
	return cases
}

// BytesSustained is the realistic op, 10 000 times in a row on each of 1,
// GOMAXPROCS and 4× GOMAXPROCS goroutines (or workers).
func BytesSustained(workers int) []Case {
	var cases []Case
	gs := []int{1, Procs(), 4 * Procs()}
	if workers > 0 {
		gs = []int{workers}
	}
	for _, g := range dedupe(gs) {
		cases = append(cases, Case{
			Top: "Bytes", Group: "Sustained", Params: fmt.Sprintf("Size=64KiB/Goroutines=%d", g),
			Workers: g, OpsPerWorker: SustainedOps,
			Unit: "one Get, a write per 4 KiB page, Put", Baseline: "make", Latency: true,
			Entries: bytesEntries(contenders.BytesConfig{Sizes: []int{realisticSize}}, allBytes, realistic(realisticSize)),
		})
	}
	return cases
}

// sequence returns the op of a goroutine that walks a fixed sequence of
// sizes, held at a time: it gets the next held sizes, writes a byte per
// page of each, and puts them back, counting each Get in t.
func sequence(seq func(i int) []int, held int) func(contenders.Bytes, *tally) func(int) Op {
	return func(p contenders.Bytes, t *tally) func(int) Op {
		return func(i int) Op {
			sizes := seq(i)
			bufs := make([]contenders.Buf, held)
			k := 0
			return func() error {
				for j := range bufs {
					n := sizes[k]
					if k++; k == len(sizes) {
						k = 0
					}
					bufs[j] = p.Get(n)
					t.add(i, n, bufs[j].B)
					touch(bufs[j].B)
				}
				sink(i, bufs[held-1].B)
				for j := range bufs {
					p.Put(bufs[j])
					bufs[j] = contenders.Buf{}
				}
				return nil
			}
		}
	}
}

// ZipfSizes returns a sequence of 1024 sizes from MixedSizes, drawn with a
// Zipf law (s = 1.1) that favours the small ones; seed fixes it.
func ZipfSizes(seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	z := rand.NewZipf(r, 1.1, 1, uint64(len(MixedSizes)-1))
	out := make([]int, 1024)
	for i := range out {
		out[i] = MixedSizes[z.Uint64()]
	}
	return out
}

// NonPowerOfTwoSizes are the sizes of Bytes/Mixed/Sizes=NonPowerOfTwo, none
// a power of two: an Ethernet frame and a jumbo one, JSON bodies, records,
// file chunks; 700 B to 300 KB.
var NonPowerOfTwoSizes = []int{700, 1200, 1500, 3000, 4500, 6000, 9000, 12500, 20000, 33000, 48000, 70000, 100000, 150000, 200000, 300000}

// NonPowerOfTwoHeld is how many buffers Bytes/Mixed/Sizes=NonPowerOfTwo
// holds at once.
const NonPowerOfTwoHeld = 8

// UniformSizes returns a sequence of 1024 sizes drawn uniformly from sizes;
// seed fixes it.
func UniformSizes(sizes []int, seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := make([]int, 1024)
	for i := range out {
		out[i] = sizes[r.IntN(len(sizes))]
	}
	return out
}

// BytesMixed is one goroutine cycling through seven power-of-two sizes,
// 4 KiB to 256 KiB, round robin and Zipf-distributed, one buffer at a time;
// and through sixteen sizes that are not powers of two, 700 B to 300 KB,
// eight buffers at a time. Each records the waste (cap/len) of the Gets and
// what the contender retains. The sync.Pool contender keeps one pool per
// size; the others serve every size from one pool.
func BytesMixed() []Case {
	cfg := contenders.BytesConfig{Sizes: MixedSizes}
	npot := contenders.BytesConfig{Sizes: NonPowerOfTwoSizes}
	return []Case{
		{
			Top: "Bytes", Group: "Mixed", Params: "Sizes=RoundRobin", Workers: 1,
			Unit: "one Get, a write per 4 KiB page, Put", Baseline: "make", Latency: true, Memory: true,
			Entries: talliedEntries(cfg, allBytes, 1, sequence(func(int) []int { return MixedSizes }, 1)),
		},
		{
			Top: "Bytes", Group: "Mixed", Params: "Sizes=Zipf", Workers: 1,
			Unit: "one Get, a write per 4 KiB page, Put", Baseline: "make", Latency: true, Memory: true,
			Entries: talliedEntries(cfg, allBytes, 1, sequence(func(i int) []int { return ZipfSizes(uint64(i)) }, 1)),
		},
		{
			Top: "Bytes", Group: "Mixed", Params: "Sizes=NonPowerOfTwo", Workers: 1,
			Unit:     fmt.Sprintf("%d Gets of sizes drawn from %d between 700 B and 300 KB, a write per 4 KiB page of each, %d Puts", NonPowerOfTwoHeld, len(NonPowerOfTwoSizes), NonPowerOfTwoHeld),
			Baseline: "make", Latency: true, Memory: true,
			Entries: talliedEntries(npot, allBytes, 1, sequence(func(i int) []int { return UniformSizes(NonPowerOfTwoSizes, uint64(i)) }, NonPowerOfTwoHeld)),
		},
	}
}

// BytesBurst is one goroutine getting N buffers of 64 KiB, writing a byte to
// each, then putting them all back; the rounds record the waste of the Gets
// and what the contender retains.
func BytesBurst() []Case {
	var cases []Case
	for _, n := range BurstCounts {
		burst := func(p contenders.Bytes, t *tally) func(int) Op {
			return func(i int) Op {
				held := make([]contenders.Buf, n)
				return func() error {
					for k := range held {
						held[k] = p.Get(realisticSize)
						t.add(i, realisticSize, held[k].B)
						held[k].B[0] = byte(k)
					}
					sink(i, held[n-1].B)
					for k := range held {
						p.Put(held[k])
						held[k] = contenders.Buf{}
					}
					return nil
				}
			}
		}
		cases = append(cases, Case{
			Top: "Bytes", Group: "Burst", Params: fmt.Sprintf("Size=64KiB/N=%d", n), Workers: 1,
			Unit: fmt.Sprintf("%d Gets, a write to each, %d Puts", n, n), Baseline: "make", Latency: true, Memory: true,
			Entries: talliedEntries(contenders.BytesConfig{Sizes: []int{realisticSize}}, allBytes, 1, burst),
		})
	}
	return cases
}

// BytesContention is the realistic 64 KiB op on GOMAXPROCS, 4× and 16×
// GOMAXPROCS goroutines (or workers), with poolkit at per-P depth 1, 4 and 8
// beside the other contenders.
func BytesContention(workers int) []Case {
	var cases []Case
	op := realistic(realisticSize)
	sizes := []int{realisticSize}
	for _, g := range goroutines(workers, []int{1, 4, 16}) {
		var es []Entry
		for _, d := range ContentionDepths {
			e := bytesEntries(contenders.BytesConfig{Depth: d, Sizes: sizes}, []string{"poolkit"}, op)[0]
			e.Name = fmt.Sprintf("poolkit depth %d", d)
			e.Key = fmt.Sprintf("Depth=%d/Impl=poolkit", d)
			es = append(es, e)
		}
		es = append(es, bytesEntries(contenders.BytesConfig{Sizes: sizes}, allBytes[1:], op)...)
		cases = append(cases, Case{
			Top: "Bytes", Group: "Contention", Params: fmt.Sprintf("Size=64KiB/Goroutines=%d", g),
			Workers: g, Unit: "one Get, a write per 4 KiB page, Put", Baseline: "make", Latency: true,
			Entries: es,
		})
	}
	return cases
}

// overwriteSrc is what FullOverwrite copies into every buffer.
var overwriteSrc = make([]byte, 1*MiB)

// BytesFullOverwrite is one goroutine getting a buffer and overwriting all of
// it, where make's zeroing is wasted work: 4 KiB, 64 KiB and 1 MiB.
func BytesFullOverwrite() []Case {
	var cases []Case
	for _, n := range OverwriteSizes {
		overwrite := func(p contenders.Bytes) func(int) Op {
			return func(i int) Op {
				return func() error {
					b := p.Get(n)
					copy(b.B, overwriteSrc)
					sink(i, b.B)
					p.Put(b)
					return nil
				}
			}
		}
		cases = append(cases, Case{
			Top: "Bytes", Group: "FullOverwrite", Params: "Size=" + SizeName(n), Workers: 1,
			Unit: "one Get, every byte written, Put", Baseline: "make",
			Entries: bytesEntries(contenders.BytesConfig{Sizes: []int{n}}, allBytes, overwrite),
		})
	}
	return cases
}

// BytesStatsOverhead is poolkit's 64 KiB hot path, alone and at 4×
// GOMAXPROCS goroutines (or workers), with no reader of its statistics, and
// with a goroutine reading them every millisecond or every 10 µs.
func BytesStatsOverhead(workers int) []Case {
	var cases []Case
	for _, g := range dedupe(append([]int{1}, goroutines(workers, []int{4})...)) {
		base := bytesEntries(contenders.BytesConfig{}, []string{"poolkit"}, getPut(realisticSize))[0]
		var es []Entry
		for _, every := range StatsIntervals {
			es = append(es, withStatsReader(base, every))
		}
		cases = append(cases, Case{
			Top: "Bytes", Group: "StatsOverhead", Params: fmt.Sprintf("Size=64KiB/Goroutines=%d", g),
			Workers: g, Unit: "one Get + Put, nothing written", Baseline: es[0].Name, Latency: g > 1, Entries: es,
		})
	}
	return cases
}

func dedupe(xs []int) []int {
	var out []int
	seen := map[int]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
