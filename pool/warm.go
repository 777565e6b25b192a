package pool

import (
	"context"
	"fmt"
	"time"
)

// Warm connects until at least max(MinIdle, 1) objects are connected
// (MinIdle capped at MaxSize) and returns nil. Connected means made and not
// being closed — idle, leased or under a health check — not a connect in
// flight: Warm returns nil only once the manager has made that many objects.
// It dials what is missing itself, as an Acquire does (each connect carries
// ctx's values, not its cancellation, and is bounded by ConnectTimeout), and
// gives the objects to the pool. With MinIdle 0 it makes one object, so that
// a successful Warm means the server was reached.
//
// The first connect that fails ends Warm at once with that error, wrapped
// (errors.Is matches it): a service can so fail its start-up when its
// database is unreachable, without waiting for ctx. Its other connects still
// in flight go on for the pool. If ctx ends first, Warm returns an error
// matching ctx's. After Close, Warm returns [ErrClosed]. A nil ctx panics.
func (p *Pool[T]) Warm(ctx context.Context) error {
	if ctx == nil {
		panic("pool: Warm: nil Context")
	}
	w := warming[T]{p: p}
	defer w.abandon()
	pause := time.Millisecond
	for {
		if p.state.Load()&closedBit != 0 {
			return ErrClosed
		}
		have, target := p.connectedNow(), int64(max(p.minIdle(), 1))
		if have >= target {
			return nil
		}
		if ctx.Err() != nil {
			return p.warmFailed(ctx)
		}
		for need := target - have - int64(w.pending()); need > 0 && p.reserve(); need-- {
			w.start(ctx)
		}
		if w.pending() == 0 {
			// Nothing to reserve: the slots are held by others' connects or
			// by closes (in a keyed pool's member, maybe by other keys'
			// idle objects: one is closed to make room). Look again when
			// they may have ended.
			p.rm.tryRoom(p)
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return p.warmFailed(ctx)
			}
			pause = min(2*pause, 100*time.Millisecond)
			continue
		}
		select {
		case r := <-w.results:
			w.got++
			if r.err != nil {
				return fmt.Errorf("pool: Warm: connect: %w", r.err)
			}
			p.keepFresh(r.e)
		case <-ctx.Done():
			return p.warmFailed(ctx)
		}
	}
}

// warming is the state of one Warm: its connect requests, which all deliver
// to one channel (with room for every one of them: a dialer's send never
// blocks), and how many results it has taken from it.
type warming[T any] struct {
	p       *Pool[T]
	reqs    []*connReq[T]
	results chan connResult[T]
	got     int
}

func (w *warming[T]) pending() int { return len(w.reqs) - w.got }

// start dials in a slot the caller reserved, on behalf of the Warm.
func (w *warming[T]) start(ctx context.Context) {
	if w.results == nil {
		// Warm keeps at most its target of requests pending, and the target
		// is at most max(MinIdle, 1).
		w.results = make(chan connResult[T], max(w.p.cfg.MinIdle, 1))
	}
	req := &connReq[T]{ch: w.results}
	w.reqs = append(w.reqs, req)
	w.p.startDial(ctx, req)
}

// abandon gives up on the requests whose results the Warm has not taken:
// each dialer still to deliver keeps its object for the pool, and the
// results already delivered are given to the pool here.
func (w *warming[T]) abandon() {
	delivered := 0
	for _, req := range w.reqs {
		if !req.state.CompareAndSwap(0, reqAbandoned) {
			delivered++
		}
	}
	for range delivered - w.got {
		if r := <-w.results; r.e != nil {
			w.p.keepFresh(r.e)
		}
	}
}

// keepFresh gives a freshly connected object, which the caller holds, to the
// pool (the next waiter, or idle), or closes it if it is already stale.
func (p *Pool[T]) keepFresh(e *entry[T]) {
	if r := p.expired(e); r != 0 {
		p.discard(e, r)
		return
	}
	p.giveBack(e)
}

// connectedNow is the number of objects made and not being closed: live
// minus the connects in flight and the closes.
func (p *Pool[T]) connectedNow() int64 {
	p.smu.Lock()
	defer p.smu.Unlock()
	return p.live.Load() - p.connecting.Load() - p.closing.Load()
}

// warmFailed is Warm's error once ctx has ended.
func (p *Pool[T]) warmFailed(ctx context.Context) error {
	return p.withState(fmt.Errorf("pool: Warm: %w", ctx.Err()))
}
