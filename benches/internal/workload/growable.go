package workload

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/poolkit/poolkit/benches/internal/contenders"
)

// GrowableChunk is how many bytes a Bytes/Growable op writes at a time, as
// an encoder or a copy loop does.
const GrowableChunk = 512

// GrowableSizes are the final sizes of Bytes/Growable's fixed-size cases.
var GrowableSizes = []int{2 * KiB, 32 * KiB, 256 * KiB}

// GrowableOutlier is the size of the rare outliers of
// Bytes/Growable/Sizes=Mixed, and GrowableOutlierEvery how many ops apart
// they come.
const (
	GrowableOutlier      = 8 * MiB
	GrowableOutlierEvery = 1000
)

// growableChunk is what the ops write.
var growableChunk = func() []byte {
	b := make([]byte, GrowableChunk)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	return b
}()

// MixedGrowableSizes returns the sizes of Bytes/Growable/Sizes=Mixed for one
// goroutine, GrowableOutlierEvery × 4 of them: final sizes from 1 KiB to
// 64 KiB, uniform in their logarithm, and every GrowableOutlierEvery-th, at
// an offset that seed fixes, GrowableOutlier.
func MixedGrowableSizes(seed uint64) []int {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	out := make([]int, 4*GrowableOutlierEvery)
	at := r.IntN(GrowableOutlierEvery)
	for i := range out {
		if i%GrowableOutlierEvery == at {
			out[i] = GrowableOutlier
			continue
		}
		out[i] = int(math.Exp2(10 + 6*r.Float64())) // 1 KiB to 64 KiB
	}
	return out
}

// growableEntries makes one entry per growable-buffer contender, each
// running, on goroutine i, Use on the sizes sizes(i) gives in turn, and
// counting the bytes written and the capacity reached in a tally.
func growableEntries(workers int, sizes func(i int) []int) []Entry {
	names := make([]string, 0, 4)
	for _, c := range contenders.GrowableContenders() {
		names = append(names, c.Name)
	}
	return entries(struct{}{}, names, func(name string) (string, func(struct{}) (talliedGrowable, error), error) {
		c, err := contenders.GrowableByName(name)
		return c.Name, func(struct{}) (talliedGrowable, error) {
			g, err := c.New()
			return talliedGrowable{g, newTally(workers)}, err
		}, err
	}, func(g talliedGrowable) func(int) Op {
		return func(i int) Op {
			seq, k := sizes(i), 0
			return func() error {
				n := seq[k]
				if k++; k == len(seq) {
					k = 0
				}
				c := g.Use(growableChunk, n)
				g.t.slots[i].asked += int64(n)
				g.t.slots[i].capacity += int64(c)
				return nil
			}
		}
	})
}

// talliedGrowable is a growable contender with the tally of its instance's
// uses: the bytes written and the capacity the buffers reached.
type talliedGrowable struct {
	contenders.Growable
	t *tally
}

// Tally reports the tally (Instance.Tally).
func (tg talliedGrowable) Tally() (asked, capacity int64) { return tg.t.read() }

// BytesGrowable is GOMAXPROCS goroutines each using a growable buffer whose
// final size the code does not know: written GrowableChunk bytes at a time
// to 2 KiB, 32 KiB or 256 KiB, or to sizes from 1 to 64 KiB with an 8 MiB
// outlier every thousand ops; then written out to io.Discard and given
// back. Each records the capacity the buffers reached per byte written and
// what the contender retains.
func BytesGrowable() []Case {
	g := Procs()
	var cases []Case
	for _, n := range GrowableSizes {
		cases = append(cases, Case{
			Top: "Bytes", Group: "Growable", Params: "Size=" + SizeName(n), Workers: g,
			Unit:     fmt.Sprintf("a buffer taken, %s written %d bytes at a time, written out, given back", SizeName(n), GrowableChunk),
			Baseline: "bytesbuffer", Latency: true, Memory: true,
			Entries: growableEntries(g, func(int) []int { return []int{n} }),
		})
	}
	cases = append(cases, Case{
		Top: "Bytes", Group: "Growable", Params: "Sizes=Mixed", Workers: g,
		Unit: fmt.Sprintf("a buffer taken, 1 to 64 KiB written (%s every %d ops) %d bytes at a time, written out, given back",
			SizeName(GrowableOutlier), GrowableOutlierEvery, GrowableChunk),
		Baseline: "bytesbuffer", Latency: true, Memory: true,
		Entries: growableEntries(g, func(i int) []int { return MixedGrowableSizes(uint64(i)) }),
	})
	return cases
}
