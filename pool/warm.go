package pool

import (
	"context"
	"fmt"
	"time"
)

// Warm connects until MinIdle objects exist (live, not being closed) and
// returns nil; connects already in flight count. A connect that fails is
// retried, after a pause that doubles from 10 ms to 1 s, until ctx ends;
// Warm then returns the first connect error it saw (matching it, and ctx's
// error too), or, if none failed, an error matching ctx's. A service can so
// fail its start-up when its database is unreachable. Each connect carries
// ctx's values (not its cancellation: a connect cut short by ctx goes on and
// its object is kept) and is bounded by ConnectTimeout. After Close, Warm
// returns [ErrClosed]. A nil ctx panics.
func (p *Pool[T]) Warm(ctx context.Context) error {
	if ctx == nil {
		panic("pool: Warm: nil Context")
	}
	var first error
	pause := backoffBase
	for {
		if p.state.Load()&closedBit != 0 {
			return ErrClosed
		}
		need := p.cfg.MinIdle - int(p.kept())
		if need <= 0 {
			return nil
		}
		if ctx.Err() != nil {
			return p.warmFailed(ctx, first)
		}
		var reqs []*connReq[T]
		for ; need > 0 && p.reserve(); need-- {
			req := &connReq[T]{ch: make(chan connResult[T], 1)}
			p.startDial(ctx, req)
			reqs = append(reqs, req)
		}
		failed := false
		for i, req := range reqs {
			select {
			case r := <-req.ch:
				if r.err != nil {
					failed = true
					if first == nil {
						first = r.err
					}
					continue
				}
				if reason := p.expired(r.e); reason != 0 {
					p.discard(r.e, reason)
				} else {
					p.giveBack(r.e)
				}
			case <-ctx.Done():
				for _, req := range reqs[i:] {
					p.abandon(req)
				}
				return p.warmFailed(ctx, first)
			}
		}
		if !failed && len(reqs) > 0 {
			pause = backoffBase
			continue
		}
		// A failure, or nothing to reserve (the pool is full, or others'
		// connects are in flight): look again after a pause.
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return p.warmFailed(ctx, first)
		}
		pause = min(2*pause, time.Second)
	}
}

// abandon gives up on the result of req's connect: the dialer keeps it for
// the pool, unless it was delivered already, and then it is given back.
func (p *Pool[T]) abandon(req *connReq[T]) {
	if req.state.CompareAndSwap(0, reqAbandoned) {
		return
	}
	if r := <-req.ch; r.e != nil {
		if reason := p.expired(r.e); reason != 0 {
			p.discard(r.e, reason)
		} else {
			p.giveBack(r.e)
		}
	}
}

// warmFailed is Warm's error once ctx has ended.
func (p *Pool[T]) warmFailed(ctx context.Context, first error) error {
	if first != nil {
		return fmt.Errorf("pool: Warm: connect: %w (still failing when the context ended: %w)", first, ctx.Err())
	}
	return p.withState(fmt.Errorf("pool: Warm: %w", ctx.Err()))
}
