package pool

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// NewSlogObserver returns an [Observer] that logs to l (slog.Default() if nil),
// under the message "pool: ..." with attributes named after the event's
// fields:
//
//   - a failed connect at Warn, a successful one at Debug;
//   - a failed Acquire at Warn — but at Debug a TryAcquire's ErrExhausted and
//     an Acquire its caller cancelled (context.Canceled), which are the
//     caller's doing, not the pool's trouble; one that took slowAcquire or
//     longer at Info (0: none); the others not at all;
//   - a close at Debug (reason, ID, age, uses; a Manager.Close error at Warn);
//   - a leak at Warn, with the Acquire's stack.
//
// An event below l's level is not logged (l.Enabled is asked first), and a
// quick successful Acquire logs nothing. Every method passes its context to
// l, so a handler can add the trace IDs it carries. A pool with a
// Config.Name adds it to every line (pool=Name): New gives each pool its own
// copy of the Observer, so one can serve several pools.
func NewSlogObserver(l *slog.Logger, slowAcquire time.Duration) Observer {
	if l == nil {
		l = slog.Default()
	}
	return slogObserver{l: l, slow: slowAcquire}
}

type slogObserver struct {
	NopObserver // for the methods it does not override (see Observer)
	l           *slog.Logger
	slow        time.Duration
	name        string // Config.Name, set by New
}

func (o slogObserver) AcquireEnd(ctx context.Context, ev AcquireEvent) {
	switch {
	case ev.Err != nil:
		level := slog.LevelWarn
		if errors.Is(ev.Err, ErrExhausted) || errors.Is(ev.Err, context.Canceled) {
			level = slog.LevelDebug
		}
		o.log(ctx, level, "pool: acquire failed", slog.Duration("wait", ev.Wait), slog.Any("error", ev.Err))
	case o.slow > 0 && ev.Wait >= o.slow:
		o.log(ctx, slog.LevelInfo, "pool: slow acquire", slog.Duration("wait", ev.Wait), slog.Uint64("id", ev.ID))
	}
}

func (o slogObserver) ConnectEnd(ctx context.Context, ev ConnectEvent) {
	if ev.Err != nil {
		o.log(ctx, slog.LevelWarn, "pool: connect failed", slog.Duration("duration", ev.Duration), slog.Any("error", ev.Err))
		return
	}
	o.log(ctx, slog.LevelDebug, "pool: connected", slog.Uint64("id", ev.ID), slog.Duration("duration", ev.Duration))
}

func (o slogObserver) Closed(ctx context.Context, ev CloseEvent) {
	level := slog.LevelDebug
	attrs := []slog.Attr{slog.String("reason", ev.Reason.String()), slog.Uint64("id", ev.ID)}
	if ev.Err != nil {
		level = slog.LevelWarn
		attrs = append(attrs, slog.Any("error", ev.Err))
	}
	o.log(ctx, level, "pool: closed", attrs...)
}

func (o slogObserver) Leak(ctx context.Context, ev LeakEvent) {
	o.log(ctx, slog.LevelWarn, "pool: lease held too long (leak?)", slog.Uint64("id", ev.ID),
		slog.Duration("held", ev.Held), slog.String("stack", ev.Stack))
}

func (o slogObserver) log(ctx context.Context, level slog.Level, msg string, attrs ...slog.Attr) {
	if !o.l.Enabled(ctx, level) {
		return
	}
	if o.name != "" {
		attrs = append([]slog.Attr{slog.String("pool", o.name)}, attrs...)
	}
	o.l.LogAttrs(ctx, level, msg, attrs...)
}
