package pool

import (
	"context"
	"time"

	"github.com/poolkit/poolkit/manager"
)

// setHooks, called by New, sets the hook bits for the options that need a
// slow path (see acqHookBit), and wraps the manager when CheckTimeout is set.
// With none of those options set it changes nothing: the fast paths stay
// exactly as they are.
func (p *Pool[T]) setHooks() {
	var bits int64
	if p.cfg.Observer != nil || p.cfg.LeakThreshold > 0 {
		bits |= acqHookBit
	}
	if p.cfg.MaxIdle > 0 || p.relCheck != nil {
		bits |= relHookBit
	}
	p.state.Store(bits)
	if d := p.cfg.CheckTimeout; d > 0 {
		p.rec = boundedRecycle[T]{p.rec, d}
	}
}

// boundedRecycle is the pool's recycler when Config.CheckTimeout is set:
// every Recycle (acquire path or health check) runs under its caller's
// context further bounded by d. Wrapping the recycler keeps check, on the
// hot path, as it is. A Recycle cut by d fails while the acquirer's context is still
// live, so check closes the object; one cut by the acquirer's context is the
// caller's cancellation (checkCanceled).
type boundedRecycle[T any] struct {
	r recycler[T]
	d time.Duration
}

func (b boundedRecycle[T]) Recycle(ctx context.Context, obj T, m manager.Metrics) error {
	ctx, cancel := context.WithTimeout(ctx, b.d)
	defer cancel()
	return b.r.Recycle(ctx, obj, m)
}

// idleAtLeast reports whether at least n objects are idle (for MaxIdle): a
// scan of the registry that stops at the n-th. Like Stats.Idle it is a
// snapshot taken state by state: two releases racing may both see n-1 and
// both publish, so the cap holds to within the number of concurrent
// releasers, and the next release over the cap closes its object.
func (p *Pool[T]) idleAtLeast(n int) bool {
	a := p.reg.arr.Load()
	for i := range a.s {
		if e := a.s[i].Load(); e != nil && e.state.Load()&1 == 0 {
			if n--; n <= 0 {
				return true
			}
		}
	}
	return false
}
