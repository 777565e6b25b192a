package bytepool

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/poolkit/poolkit/internal/cacheline"
	"github.com/poolkit/poolkit/internal/nocopy"
	"github.com/poolkit/poolkit/internal/shard"
)

// A Sizer learns the size that the Buffers of one call site reach, so that
// a new Buffer starts at it. A Pool learns the same for every Buffer that
// [Pool.NewBuffer] makes without a size hint (see [Buffer]); a Sizer keeps
// apart a call site whose Buffers differ from the rest of the pool's, log
// lines beside response bodies, so that neither starts at the other's size.
//
// The zero Sizer is ready to use and draws from [Default]; set Pool, before
// first use, to draw from another. A Sizer is safe for concurrent use by any
// number of goroutines, and must not be copied after first use.
type Sizer struct {
	_ nocopy.NoCopy
	// Pool is the pool the Sizer's Buffers draw from; nil: Default().
	Pool *Pool
	l    learner
}

// NewBuffer returns an empty Buffer drawing from s.Pool, with room for the
// size the Sizer has learnt (none before it has learnt one); Free teaches the
// Sizer the size the Buffer reached. The header comes from the pool's cache,
// as Pool.NewBuffer's does.
func (s *Sizer) NewBuffer() *Buffer {
	p := s.Pool
	if p == nil {
		p = Default()
	}
	return p.newBuffer(0, &s.l, &s.l)
}

// Size returns the size a Buffer from s starts at: what it has learnt, 0
// before it has learnt anything.
func (s *Sizer) Size() int { return s.l.size() }

// The learning rule.
//
// What is learnt is the largest content a Buffer held in one use, its high
// water (Buffer.hi), taught at Free, rounded up to a quarter step (the
// sizes of the classes, see hotIndex); a Buffer freed without having held a
// byte teaches nothing. Each P keeps the last learnWindow of them in a
// window of its own, written only by the goroutine running on that P while
// pinned, as the per-P stacks are: teaching costs no shared write. When a
// P's window is full, it publishes the window's 95th percentile, the
// (learnAbove+1)-th largest, as the learner's size, and starts an empty
// window. So:
//
//   - a steady workload starts every Buffer at a size that holds 95% of
//     them: they never grow, and the others double from there;
//   - up to learnAbove outliers in a window, a 64 MiB body among 2 KiB
//     ones, do not move the size at all;
//   - what is learnt is forgotten after one window on one P: a workload
//     that changes is followed within learnWindow Buffers freed on a P.
//
// The size a Buffer starts at is at most the pool's MaxSize: no Buffer takes
// memory from outside the pool before its content needs it.

// learnWindow is how many Buffers a P learns from before it publishes a
// size; learnAbove, how many of them may be above the size it publishes (a
// twentieth, rounded down).
const (
	learnWindow = 64
	learnAbove  = learnWindow / 20
)

// learner learns a size as described above. The zero learner has learnt
// nothing and is ready to use.
type learner struct {
	// learnt is the size published, 0 until a window has been.
	learnt atomic.Int64
	// windows is the per-P windows, made on the first lesson and replaced,
	// larger, when a P beyond them teaches.
	windows atomic.Pointer[windowTable]
	// mu guards shared and the making of windows. It is never taken while
	// pinned.
	mu sync.Mutex
	// shared is the window of the builds that pin nothing (race,
	// poolkit_nolinkname), and of a P beyond windows until they are
	// replaced.
	shared window
}

// window is one P's lessons: n of them in lessons, in the order taught.
// Its owner alone reads and writes it: the goroutine running on its P,
// pinned (or, for learner.shared, the holder of learner.mu). It fills a
// cache line pair, so that no two Ps write one line.
type window struct {
	n       uint8
	lessons [learnWindow]uint8
	_       [cacheline.Size - 1 - learnWindow]byte
}

// windowTable is one window per P id, from w[0]; padded as readyTable is.
type windowTable struct {
	_ cacheline.Pad
	w []window
	_ cacheline.Pad
}

// newWindowTable returns windows for n Ps, with an unused window before and
// after them, so that no other object shares their lines.
func newWindowTable(n int) *windowTable {
	return &windowTable{w: make([]window, n+2)[1 : n+1 : n+1]}
}

// lesson is what a Buffer whose content reached hw > 0 bytes teaches: the
// quarter-step index of hw (hotIndex), at most 251 for any int hw, and
// larger for a larger hw.
func lesson(hw int) uint8 { return uint8(hotIndex(max(hw, minClassSize) - 1)) }

// teach learns lesson i, for a caller not pinned.
func (l *learner) teach(i uint8) {
	pid := shard.Enter()
	if w := l.window(pid); w != nil {
		if w.add(i) {
			l.publish(w)
		}
		shard.Exit()
		return
	}
	shard.Exit()
	l.teachSlow(pid, i)
}

// window returns P pid's window, for a caller pinned to P pid; nil where
// there is none (see teachSlow).
func (l *learner) window(pid int) *window {
	t := l.windows.Load()
	if t == nil || uint(pid) >= uint(len(t.w)) {
		return nil
	}
	return &t.w[pid]
}

// teachSlow learns i where the calling P has no window: the builds that pin
// nothing (pid is -1), the first lesson, and a P beyond the windows
// (GOMAXPROCS grew), for which it makes windows for every P, dropping what
// the old ones held. It learns i in the shared window meanwhile.
func (l *learner) teachSlow(pid int, i uint8) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t := l.windows.Load(); pid >= 0 && (t == nil || pid >= len(t.w)) {
		l.windows.Store(newWindowTable(max(runtime.GOMAXPROCS(0), pid+1)))
	}
	if l.shared.add(i) {
		l.publish(&l.shared)
	}
}

// add appends lesson i to w and reports whether w is full, in which case it
// is emptied for the next lessons, and the caller publishes what it holds.
func (w *window) add(i uint8) (full bool) {
	n := w.n
	w.lessons[n%learnWindow] = i
	if n++; n < learnWindow {
		w.n = n
		return false
	}
	w.n = 0
	return true
}

// publish makes the size of a full window, its 95th percentile, the size
// learnt. Leaf code: it runs pinned.
func (l *learner) publish(w *window) {
	// Stored only if it changed: learnt shares a line with what every
	// NewBuffer and Free read, on every P.
	if n := int64(hotSize(int(percentile(&w.lessons)))); n != l.learnt.Load() {
		l.learnt.Store(n)
	}
}

// percentile returns the (learnAbove+1)-th largest of win: the smallest
// value that at most learnAbove values of win are above.
func percentile(win *[learnWindow]uint8) uint8 {
	var top [learnAbove + 1]uint8 // the largest seen, largest first
	for _, x := range win {
		if x <= top[learnAbove] {
			continue
		}
		j := learnAbove
		for ; j > 0 && top[j-1] < x; j-- {
			top[j] = top[j-1]
		}
		top[j] = x
	}
	return top[learnAbove]
}

// size returns the size learnt, 0 before any.
func (l *learner) size() int { return int(l.learnt.Load()) }

// startSize returns the size a Buffer of l drawing from p starts at, that of
// a class of p: what l has learnt (a quarter step, see hotSize), at least
// MinSize and at most MaxSize; 0 before l has learnt anything.
func (l *learner) startSize(p *Pool) int {
	if n := l.size(); n > 0 {
		return min(max(n, p.minSize), p.maxSize)
	}
	return 0
}
